"""UMAP's approximate-neighbour path (above 4,096 fitted rows), in a file of its own: its
first use in a process compiles pynndescent for a minute or more, so the two test
workers (whole files each) run it beside the rest of test_embedding.py."""

from __future__ import annotations

import numpy as np
import pytest

from calibcore.embedding import embed
from tests.calibcore.test_embedding import placed_sample


@pytest.mark.slow
def test_umap_neighbour_placement_puts_copies_of_sample_rows_near_them() -> None:
    """Above 4,096 fitted rows the "neighbors" placement searches UMAP's own index: a
    row outside the sample that copies a sample row lands near that row's fitted
    position, and the placement is deterministic."""
    rng = np.random.default_rng(3)
    centers = rng.normal(size=(6, 5)) * 4
    distinct = centers[rng.integers(0, 6, size=4_500)] + rng.normal(size=(4_500, 5))
    data = np.vstack([distinct, distinct[:1_500]])  # rows 4,500.. copy rows 0..1,499
    sample_size = 4_200
    result = embed(data, reducer="umap", sample_size=sample_size, placement="neighbors")
    assert result.placement == "neighbors"
    assert any("UMAP's own nearest-neighbour index" in note for note in result.notes)
    fitted = np.zeros(data.shape[0], dtype=bool)
    fitted[placed_sample(sample_size, n_rows=data.shape[0])] = True
    copies = np.arange(4_500, 6_000)
    originals = copies - 4_500
    placed = copies[~fitted[copies] & fitted[originals]]
    assert placed.size > 100
    distance = np.linalg.norm(result.coordinates[placed]
                              - result.coordinates[placed - 4_500], axis=1)
    scale = np.linalg.norm(result.coordinates[fitted].std(axis=0))
    assert np.median(distance) < 0.05 * scale
    again = embed(data, reducer="umap", sample_size=sample_size, placement="neighbors")
    np.testing.assert_array_equal(again.coordinates, result.coordinates)
