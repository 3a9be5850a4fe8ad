"""The representation pipeline (encoding, PCA, t-SNE/UMAP on samples, display map)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.decomposition import PCA

from calibcore.exceptions import CalibrationInputError
from calibcore.local import PLACEMENT_NEIGHBORS, Representation, embed, fit_representation


@pytest.fixture
def table(rng: np.random.Generator) -> pd.DataFrame:
    n = 300
    frame = pd.DataFrame({
        "income": rng.lognormal(10, 1, size=n),
        "age": rng.integers(18, 90, size=n).astype(float),
        "region": rng.choice(["north", "south", "east"], size=n),
        "student": rng.choice([True, False], size=n),
    })
    frame.loc[[4, 9, 20], "income"] = np.nan
    frame.loc[[7], "region"] = None
    return frame


# ---------------------------------------------------------------- encoding


def test_encoding_standardizes_one_hots_and_imputes(table: pd.DataFrame) -> None:
    representation = fit_representation(table)
    encoded = representation.transform(table)
    assert representation.numeric_columns == ("income", "age")
    assert representation.categorical_columns == ("region", "student")
    assert representation.encoded_names == (
        "income", "age", "region=east", "region=north", "region=south",
        "student=False", "student=True",
    )
    # Reference: median imputation, then (x - mean) / std (ddof 0).
    income = table["income"].fillna(table["income"].median()).to_numpy()
    np.testing.assert_allclose(encoded[:, 0], (income - income.mean()) / income.std())
    age = table["age"].to_numpy()
    np.testing.assert_allclose(encoded[:, 1], (age - age.mean()) / age.std())
    region = table["region"].fillna(table["region"].mode()[0])
    for j, level in enumerate(["east", "north", "south"]):
        np.testing.assert_array_equal(encoded[:, 2 + j], (region == level).to_numpy())
    np.testing.assert_array_equal(encoded[:, 6], table["student"].to_numpy())
    assert dict(representation.imputed) == {"income": 3, "region": 1}
    assert any("3 missing values in 'income'" in note for note in representation.notes)


def test_unseen_levels_and_new_missing_values(table: pd.DataFrame) -> None:
    representation = fit_representation(table)
    fresh = table.iloc[:3].copy()
    fresh["region"] = ["west", None, "north"]
    fresh["age"] = [np.nan, 30.0, 40.0]
    encoded = representation.transform(fresh)
    np.testing.assert_array_equal(encoded[0, 2:5], 0.0)  # unseen level: no column set
    fill = table["region"].mode()[0]
    assert encoded[1, 2 + ["east", "north", "south"].index(fill)] == 1.0
    age = table["age"].to_numpy()
    assert encoded[0, 1] == pytest.approx((np.median(age) - age.mean()) / age.std())


def test_forced_categorical_and_chosen_columns(table: pd.DataFrame) -> None:
    representation = fit_representation(table, columns=["age", "region"], categorical=["age"])
    assert representation.numeric_columns == ()
    assert representation.categorical_columns == ("age", "region")
    assert representation.dimension == table["age"].nunique() + 3


def test_representation_json_round_trip_is_exact(table: pd.DataFrame) -> None:
    representation = fit_representation(table, reducer="pca", n_components=3)
    document = json.loads(json.dumps(representation.to_dict()))
    restored = Representation.from_dict(document)
    np.testing.assert_array_equal(restored.transform(table), representation.transform(table))
    assert restored.encoded_names == representation.encoded_names
    with pytest.raises(CalibrationInputError, match="representation"):
        Representation.from_dict({"format": "something else"})


def test_pca_matches_scikit_learn_up_to_sign(rng: np.random.Generator) -> None:
    data = rng.normal(size=(500, 6)) @ rng.normal(size=(6, 6))
    representation = fit_representation(data, reducer="pca", n_components=4)
    ours = representation.transform(data)
    standardized = (data - data.mean(axis=0)) / data.std(axis=0)
    theirs = PCA(n_components=4).fit_transform(standardized)
    for j in range(4):
        sign = np.sign(ours[:, j] @ theirs[:, j])
        np.testing.assert_allclose(ours[:, j], sign * theirs[:, j], atol=1e-9)


def test_pca_drops_directions_without_variance(rng: np.random.Generator) -> None:
    base = rng.normal(size=(200, 2))
    data = np.column_stack([base, base[:, 0] + base[:, 1], np.ones(200)])  # rank 2
    representation = fit_representation(data, reducer="pca", n_components=4)
    assert representation.dimension == 2


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 50), p=st.integers(1, 5))
def test_encoding_is_row_wise(seed: int, n: int, p: int) -> None:
    """A row's encoding does not depend on which other rows are transformed with it."""
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(n, p))
    representation = fit_representation(data, reducer="pca", n_components=2)
    whole = representation.transform(data)
    order = rng.permutation(n)
    np.testing.assert_allclose(representation.transform(data[order]), whole[order], atol=1e-12)
    np.testing.assert_allclose(representation.transform(data[:1]), whole[:1], atol=1e-12)


def test_encoding_errors_name_column_and_rows(table: pd.DataFrame) -> None:
    representation = fit_representation(table)
    with pytest.raises(CalibrationInputError, match="'age'") as info:
        representation.transform(table.drop(columns="age"))
    assert info.value.column == "age"
    broken = table.copy()
    broken.loc[[2, 5], "age"] = np.inf
    with pytest.raises(CalibrationInputError, match="rows 2, 5"):
        fit_representation(broken)
    with pytest.raises(CalibrationInputError, match="no feature column named 'height'"):
        fit_representation(table, columns=["height"])
    with pytest.raises(CalibrationInputError, match="must be numeric"):
        fit_representation(table, reducer="columns")
    with pytest.raises(CalibrationInputError, match="t-SNE and UMAP cannot be saved"):
        fit_representation(table, reducer="umap")  # type: ignore[arg-type]
    ids = pd.DataFrame({"id": [f"row{i}" for i in range(500)]})
    with pytest.raises(CalibrationInputError, match="500 distinct values"):
        fit_representation(ids)
    with pytest.raises(CalibrationInputError, match="no values"):
        fit_representation(pd.DataFrame({"x": [np.nan, np.nan]}))


# ---------------------------------------------------------------- embed()


def test_embed_pca_on_a_sample(table: pd.DataFrame) -> None:
    result = embed(table, reducer="pca", n_components=3, sample_size=100, random_state=1)
    assert result.coordinates.shape == (300, 3) and result.map_2d.shape == (300, 2)
    assert result.fitted_rows == 100 and result.sampled and result.placement == "transform"
    assert any("sample of 100 of 300" in note for note in result.notes)
    np.testing.assert_array_equal(result.map_2d, result.coordinates[:, :2])
    assert result.representation is not None
    np.testing.assert_allclose(result.representation.transform(table), result.coordinates)
    again = embed(table, reducer="pca", n_components=3, sample_size=100, random_state=1)
    np.testing.assert_array_equal(again.coordinates, result.coordinates)
    other = embed(table, reducer="pca", n_components=3, sample_size=100, random_state=2)
    assert not np.allclose(other.coordinates, result.coordinates)


def test_embed_none_and_columns(table: pd.DataFrame, rng: np.random.Generator) -> None:
    result = embed(table, reducer="none")
    assert result.dimension == 7 and result.placement == "all" and not result.sampled
    assert result.map_source == "PCA(2) of the kernel space"
    centered = result.coordinates - result.coordinates.mean(axis=0)
    reference = PCA(n_components=2).fit_transform(centered)
    for j in range(2):
        assert abs(np.corrcoef(result.map_2d[:, j], reference[:, j])[0, 1]) > 1 - 1e-9
    given_map = pd.DataFrame({"u": rng.normal(size=50), "v": rng.normal(size=50) * 10})
    as_given = embed(given_map, reducer="columns")
    np.testing.assert_array_equal(as_given.coordinates, given_map.to_numpy())
    assert as_given.map_source == "the kernel space itself"
    line = embed(given_map[["u"]], reducer="columns")
    np.testing.assert_array_equal(line.map_2d[:, 1], 0.0)


def test_embed_rejects_bad_options(table: pd.DataFrame) -> None:
    with pytest.raises(CalibrationInputError, match="reducer must be one of"):
        embed(table, reducer="lda")  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="2-D or 3-D"):
        embed(table, reducer="tsne", n_components=4)
    with pytest.raises(CalibrationInputError, match="at least 10 rows"):
        embed(table.iloc[:5], reducer="umap")
    with pytest.raises(CalibrationInputError, match="placement"):
        embed(table, placement="anywhere")  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="sample_size"):
        embed(table, sample_size=0)


def test_progress_reaches_one(table: pd.DataFrame) -> None:
    seen: list[float] = []
    embed(table, progress=lambda fraction, message: seen.append(fraction))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and np.all(np.diff(seen) >= 0)


@pytest.mark.slow
def test_tsne_on_a_sample_places_the_rest_by_neighbours(rng: np.random.Generator) -> None:
    centers = rng.normal(size=(3, 5)) * 6
    data = centers[rng.integers(0, 3, size=400)] + rng.normal(size=(400, 5))
    result = embed(data, reducer="tsne", sample_size=150, random_state=0)
    assert result.placement == "neighbors" and result.fitted_rows == 150
    assert result.representation is None
    # Reference placement: mean map position of the nearest sample rows.
    encoded = (data - data.mean(axis=0)) / data.std(axis=0)
    sample = np.sort(np.random.default_rng(0).choice(400, size=150, replace=False))
    rest = np.setdiff1d(np.arange(400), sample)
    distance = np.linalg.norm(encoded[rest, None, :] - encoded[None, sample, :], axis=2)
    nearest = np.argsort(distance, axis=1)[:, :PLACEMENT_NEIGHBORS]
    expected = result.coordinates[sample][nearest].mean(axis=1)
    np.testing.assert_allclose(result.coordinates[rest], expected, atol=1e-9)


@pytest.mark.slow
def test_umap_on_a_sample_transforms_the_rest(rng: np.random.Generator) -> None:
    centers = rng.normal(size=(3, 6)) * 8
    labels = rng.integers(0, 3, size=600)
    data = pd.DataFrame(centers[labels] + rng.normal(size=(600, 6)),
                        columns=[f"f{j}" for j in range(6)])
    result = embed(data, reducer="umap", n_components=3, sample_size=300, random_state=0)
    assert result.coordinates.shape == (600, 3) and result.placement == "transform"
    assert result.map_source == "PCA(2) of the kernel space"
    # Clusters stay apart in the map: each row is nearer its cluster's centroid.
    centroids = np.array([result.coordinates[labels == k].mean(axis=0) for k in range(3)])
    nearest = np.linalg.norm(result.coordinates[:, None] - centroids[None], axis=2).argmin(1)
    assert np.mean(nearest == labels) > 0.95
    # The faster placements land close to UMAP's own transform (2-D maps, same fit).
    transformed = embed(data, reducer="umap", sample_size=300, placement="transform")
    scale = np.linalg.norm(transformed.coordinates.std(axis=0))
    for placement in ("graph", "neighbors"):
        placed = embed(data, reducer="umap", sample_size=300, placement=placement)
        assert placed.placement == placement
        np.testing.assert_array_equal(placed.coordinates[placed_sample(300)],
                                      transformed.coordinates[placed_sample(300)])
        distance = np.linalg.norm(placed.coordinates - transformed.coordinates, axis=1)
        assert np.median(distance) < 0.05 * scale


def placed_sample(size: int, n_rows: int = 600, random_state: int = 0) -> np.ndarray:
    """The rows embed() fits the reducer on (seeded as documented)."""
    return np.sort(np.random.default_rng(random_state).choice(n_rows, size=size, replace=False))


@pytest.mark.slow
def test_umap_reports_epochs_stops_on_a_raise_and_frees_the_bar_lock(
        rng: np.random.Generator) -> None:
    """A callback raising between layout epochs (in a worker thread) stops the fit and
    leaves tqdm's write lock free, so UMAP in other threads does not wait for ever; the
    embedding does not depend on the callback."""
    import threading

    from tqdm.auto import tqdm

    data = rng.normal(size=(400, 5))  # small: two fits compare bit for bit
    messages: list[str] = []

    class Stop(Exception):
        pass

    def cancel(fraction: float, message: str) -> None:
        messages.append(message)
        if "epoch" in message:
            raise Stop

    def stopped() -> None:
        with pytest.raises(Stop):
            embed(data, reducer="umap", sample_size=None, random_state=3, progress=cancel)

    worker = threading.Thread(target=stopped)
    worker.start()
    worker.join()
    assert messages[-1].startswith("UMAP: epoch ")
    free = []
    for lock in tqdm.get_lock().locks:  # held by no thread: this one can take it at once
        free.append(lock.acquire(False))
        if free[-1]:
            lock.release()
    assert free and all(free)
    quiet = embed(data, reducer="umap", sample_size=None, random_state=3)
    reported = embed(data, reducer="umap", sample_size=None, random_state=3,
                     progress=lambda fraction, message: None)
    np.testing.assert_array_equal(quiet.coordinates, reported.coordinates)
