"""UMAP's approximate-neighbour placement (from 4,096 fitted rows on), without its index's
first-use compilation: the placement is checked against an index that answers like
pynndescent's (``query(rows, k) -> (indices, distances)``) with a brute-force search,
and UMAP is asked to hand over its index. The real index, compiled cold in a fresh
process, is timed and checked by ``benchmarks/bench_local.py`` (a minute or more on 2
cores: a cold-compile measurement, not a unit test)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from calibcore.local import _manifold, embed
from tests.calibcore.local.test_embedding import placed_sample


class BruteForceIndex:
    """Answers like pynndescent's ``NNDescent.query``, by brute force, and records the
    batches it was asked (the placement must search in fixed chunks)."""

    def __init__(self, fitted: np.ndarray) -> None:
        self.fitted = fitted
        self.batches: list[np.ndarray] = []

    def query(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        self.batches.append(rows.copy())
        distance = ((rows[:, None, :] - self.fitted[None, :, :]) ** 2).sum(axis=2)
        nearest = np.argsort(distance, axis=1, kind="stable")[:, :k]
        return nearest, np.take_along_axis(distance, nearest, axis=1)


class FakeUMAP:
    """Stands for ``umap.UMAP``: a fixed linear map of the fitted rows, and the fitted
    search index UMAP keeps from 4,096 fitted rows on."""

    instances: ClassVar[list[FakeUMAP]] = []

    def __init__(self, n_components: int, **_: object) -> None:
        self.n_components = n_components
        FakeUMAP.instances.append(self)

    def fit_transform(self, rows: np.ndarray) -> np.ndarray:
        self._knn_search_index = BruteForceIndex(rows)
        projection = np.random.default_rng(0).normal(size=(rows.shape[1], self.n_components))
        return rows @ projection


@pytest.fixture
def fake_umap(monkeypatch: pytest.MonkeyPatch) -> type[FakeUMAP]:
    class Module:
        UMAP = FakeUMAP

    FakeUMAP.instances = []
    monkeypatch.setattr(_manifold, "_import_umap", lambda: Module)
    return FakeUMAP


@pytest.mark.slow
def test_rows_beyond_the_sample_are_placed_through_umaps_own_index(
        fake_umap, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row outside the sample that copies a sample row lands at the mean map position of
    its nearest sample rows found by UMAP's index (exactly, for this index); the search
    runs in fixed chunks, and the note says which index was used."""
    rng = np.random.default_rng(3)
    centers = rng.normal(size=(6, 5)) * 4
    distinct = centers[rng.integers(0, 6, size=4_500)] + rng.normal(size=(4_500, 5))
    data = np.vstack([distinct, distinct[:1_500]])  # rows 4,500.. copy rows 0..1,499
    sample_size = 4_200
    monkeypatch.setattr(_manifold, "TRANSFORM_CHUNK", 500)  # several chunks
    result = embed(data, reducer="umap", sample_size=sample_size, placement="neighbors")
    assert result.placement == "neighbors"
    assert any("UMAP's own nearest-neighbour index" in note for note in result.notes)
    (model,) = fake_umap.instances
    index = model._knn_search_index
    sizes = [batch.shape[0] for batch in index.batches]
    assert sum(sizes) == data.shape[0] - sample_size and sizes[:-1] == [500] * (len(sizes) - 1)
    fitted = placed_sample(sample_size, n_rows=data.shape[0])
    sample_map = result.coordinates[fitted]
    others = np.setdiff1d(np.arange(data.shape[0]), fitted)
    # each row outside the sample: the mean map position of the 10 sample rows the index
    # named for it (the rows are asked in table order, on the encoded features)
    nearest, _ = BruteForceIndex(index.fitted).query(np.vstack(index.batches),
                                                     _manifold.PLACEMENT_NEIGHBORS)
    np.testing.assert_allclose(result.coordinates[others], sample_map[nearest].mean(axis=1))
    # a copy of a sample row has that row among its nearest: it lands near it
    in_sample = np.zeros(data.shape[0], dtype=bool)
    in_sample[fitted] = True
    copies = np.arange(4_500, 6_000)
    placed = copies[~in_sample[copies] & in_sample[copies - 4_500]]
    assert placed.size > 100
    distance = np.linalg.norm(result.coordinates[placed]
                              - result.coordinates[placed - 4_500], axis=1)
    assert np.median(distance) < 0.5 * np.linalg.norm(sample_map.std(axis=0))
