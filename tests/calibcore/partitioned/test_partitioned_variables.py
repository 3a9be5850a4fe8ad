"""Variable-based calibration of a partitioned table: on a LocalCluster of two
worker processes and tables of 1, 3 and 17 partitions, the same kinds and VECE as
rank_variables / variable_ece on all rows, pandas.qcut's edges bit for bit, and LOESS
curves within the stated bound of loess_curves. Golden values come from the in-memory
functions, computed here."""

from __future__ import annotations

from collections.abc import Iterator
from unittest.mock import patch

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.distributed import Client, LocalCluster
from hypothesis import given, settings
from hypothesis import strategies as st

import calibcore.partitioned._numeric_variables as numeric_variables_module
import calibcore.partitioned.variables as partitioned_variables_module
from calibcore.exceptions import CalibrationInputError
from calibcore.partitioned import (
    FloatCells,
    PartitionedVariables,
    coarse_counts,
    float_keys,
    key_floats,
    merge_coarse_counts,
    partitioned_variables,
    qcut_levels,
    variables_of_parts,
)
from calibcore.partitioned._binned_loess import LOESS_BOUND
from calibcore.partitioned.exact_quantiles import COARSE_SHIFT
from calibcore.variable import loess_curves, rank_variables, variable_ece
from calibcore.variable._binning import qcut_bins

FEATURES = ["normal", "heavy", "levels", "colour", "gappy"]
CURVE_FIELDS = ("error", "error_low", "error_high", "predicted_error", "predicted_error_low",
                "predicted_error_high")


@pytest.fixture(scope="module")
def client(dask_cluster: LocalCluster) -> Iterator[Client]:
    with Client(dask_cluster) as connected:  # the default client of this module's tests
        yield connected


def table(n_rows: int, seed: int) -> pd.DataFrame:
    """Binary predictions miscalibrated along the features: a normal float, a heavy-tailed
    float with ties, an integer of six levels with +/-inf (categorical by the rule), a
    string and an exponential float with NaN and inf."""
    rng = np.random.default_rng(seed)
    normal = rng.normal(size=n_rows)
    heavy = np.round(rng.standard_t(2, size=n_rows), 1)
    levels = rng.integers(0, 6, size=n_rows).astype(np.float64)
    levels[rng.choice(n_rows, 6, replace=False)] = [np.inf, np.inf, -np.inf, np.nan, np.nan,
                                                    np.nan]
    colour = rng.choice(["red", "green", "blue", "grey"], size=n_rows)
    gappy = rng.exponential(size=n_rows)
    gappy[rng.uniform(size=n_rows) < 0.1] = np.nan
    gappy[rng.choice(n_rows, 3, replace=False)] = np.inf
    logit = 0.8 * normal + 0.3 * np.nan_to_num(levels, posinf=0, neginf=0) - 1 + (
        colour == "red")
    p = 1 / (1 + np.exp(-logit))
    truth = 1 / (1 + np.exp(-(1.3 * logit + 0.4 * np.sin(3 * heavy))))
    return pd.DataFrame({"y": (rng.uniform(size=n_rows) < truth).astype(int), "p_0": 1 - p,
                         "p_1": p, "normal": normal, "heavy": heavy, "levels": levels,
                         "colour": colour, "gappy": gappy})


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return table(4_000, seed=0)


@pytest.fixture(scope="module")
def golden(rows: pd.DataFrame) -> dict[str, object]:
    """The in-memory diagnostics of all rows: ranking, VECE by kind, curves, edges."""
    labels, proba = rows["y"].to_numpy(), rows[["p_0", "p_1"]].to_numpy()
    ranking = rank_variables(rows[FEATURES], labels, proba, n_permutations=0)
    ranking = ranking.set_index("variable")
    numeric = [name for name in FEATURES if ranking.loc[name, "kind"] == "numeric"]
    return {
        "ranking": ranking,
        "vece": {name: variable_ece(rows[name], labels, proba, kind=ranking.loc[name, "kind"])
                 for name in FEATURES},
        "curves": {name: loess_curves(rows[name], labels, proba) for name in numeric},
        "edges": {name: qcut_bins(_finite(rows[name]), 10)[1] for name in numeric},
    }


def _finite(values: pd.Series) -> np.ndarray:
    numbers = values.to_numpy(dtype=np.float64)
    return numbers[np.isfinite(numbers)]


def _same_floats(first: np.ndarray, second: np.ndarray) -> bool:
    """Equal bit for bit (zeros of either sign taken as 0.0)."""
    first, second = np.asarray(first) + 0.0, np.asarray(second) + 0.0
    return first.shape == second.shape and bool(np.all(
        first.view(np.int64) == second.view(np.int64)))


@pytest.mark.slow
@pytest.mark.parametrize("n_partitions", [1, 3, 17])
def test_variables_equal_the_in_memory_ones(client, rows, golden, n_partitions) -> None:
    frame = dd.from_pandas(rows, npartitions=n_partitions)
    assert frame.npartitions == n_partitions
    result = partitioned_variables(frame, "y", ["p_0", "p_1"], ["0", "1"], FEATURES)
    ranking = golden["ranking"]
    assert [v.variable for v in result.variables] == FEATURES
    assert result.n_rows == len(rows) and result.loess_bound == LOESS_BOUND
    assert [v.kind for v in result.variables] == [
        "numeric", "numeric", "categorical", "categorical", "numeric"]
    for variable in result.variables:
        expected = ranking.loc[variable.variable]
        assert variable.kind == expected["kind"], variable.variable
        assert (variable.n, variable.n_missing) == (expected["n"], expected["n_missing"])
        assert variable.vece == pytest.approx(golden["vece"][variable.variable], rel=1e-9,
                                              abs=1e-12)
        assert variable.vece == pytest.approx(expected["vece"], rel=1e-9, abs=1e-12)
        assert int(variable.bin_sums[:, 0].sum()) == variable.n
        if variable.kind == "categorical":
            assert variable.vce_max == pytest.approx(expected["vce_max"], rel=1e-9)
            assert variable.v_star == expected["v_star"] and variable.curves is None
            continue
        assert _same_floats(variable.edges, golden["edges"][variable.variable])
        _check_curves(variable.curves, golden["curves"][variable.variable])
        assert variable.histogram_exact
        assert abs(variable.vce_max - expected["vce_max"]) <= LOESS_BOUND


def _check_curves(got, expected) -> None:
    """Points and histogram exact; the same points left out; fits and bands within the
    bound; v* a place where the in-memory gap is within twice the bound of its largest."""
    assert _same_floats(got.x, expected.x)
    np.testing.assert_array_equal(got.histogram_counts, expected.histogram_counts)
    assert _same_floats(got.histogram_edges, expected.histogram_edges)
    drawn = ~np.isnan(expected.error)  # points of leverage above 1 are left out alike
    for field in CURVE_FIELDS:
        np.testing.assert_array_equal(np.isnan(getattr(got, field)), ~drawn, err_msg=field)
        difference = np.abs(getattr(got, field) - getattr(expected, field))[drawn].max()
        assert difference <= LOESS_BOUND, (field, difference)
    gap = np.abs(expected.error - expected.predicted_error)
    assert gap[np.searchsorted(expected.x, got.v_star)] >= expected.vce_max - 2 * LOESS_BOUND
    assert (got.n, got.n_missing, got.span, got.exact) == (
        expected.n, expected.n_missing, expected.span, expected.exact)


@pytest.mark.slow
def test_ranking_table_has_rank_variables_columns(client, rows, golden) -> None:
    result = partitioned_variables(dd.from_pandas(rows, npartitions=3), "y", ["p_0", "p_1"],
                                   ["0", "1"], FEATURES)
    table = result.ranking()
    expected = golden["ranking"].reset_index()
    assert list(table.columns) == list(expected.columns)
    assert list(table["variable"]) == list(expected["variable"])
    assert table["p_value"].isna().all()
    assert result["colour"].categories.tolist() == ["blue", "green", "grey", "red"]


def parts_of(frame: pd.DataFrame, n_parts: int, seed: int) -> list[pd.DataFrame]:
    cuts = np.sort(np.random.default_rng(seed).integers(0, len(frame) + 1, size=n_parts - 1))
    return [frame.iloc[start:stop] for start, stop in zip(
        np.concatenate([[0], cuts]), np.concatenate([cuts, [len(frame)]]), strict=True)]


def test_few_rows_are_smoothed_exactly_and_empty_parts_are_fine(rows) -> None:
    """At most N_EXACT rows: gathered in the table's order and smoothed as in memory."""
    small = rows.iloc[:700]
    parts = [small.iloc[:0], *parts_of(small, 5, seed=1), small.iloc[:0]]
    result = variables_of_parts(parts, "y", ["p_0", "p_1"], ["0", "1"], ["normal", "gappy"],
                                span=0.5, n_points=80)
    labels, proba = small["y"].to_numpy(), small[["p_0", "p_1"]].to_numpy()
    for variable in result.variables:
        expected = loess_curves(small[variable.variable], labels, proba, span=0.5, n_points=80)
        assert variable.curves is not None and variable.curves.exact
        for field in ("x", *CURVE_FIELDS, "histogram_counts"):
            np.testing.assert_array_equal(getattr(variable.curves, field),
                                          getattr(expected, field))
        assert variable.curves.n_missing == expected.n_missing
        assert variable.vece == pytest.approx(variable_ece(
            small[variable.variable], labels, proba), rel=1e-9)


def test_histogram_is_read_off_the_cells_beyond_the_cap(rows) -> None:
    """With no room for the values around its edges, the histogram under the curves is
    said to be inexact and each count is within the rows of the cells at its edges."""
    labels, proba = rows["y"].to_numpy(), rows[["p_0", "p_1"]].to_numpy()
    with patch.object(numeric_variables_module, "MAX_HISTOGRAM_VALUES", 0):
        result = variables_of_parts(parts_of(rows, 3, seed=2), "y", ["p_0", "p_1"],
                                    ["0", "1"], ["normal"])
    variable, curves = result["normal"], result["normal"].curves
    expected = loess_curves(rows["normal"], labels, proba)
    assert curves is not None and not variable.histogram_exact
    assert _same_floats(curves.histogram_edges, expected.histogram_edges)
    # 4,000 rows in about 2^16 cells: the cells at a bin's edges hold a row or two
    assert np.abs(curves.histogram_counts - expected.histogram_counts).max() <= 4
    assert curves.histogram_counts.sum() == expected.histogram_counts.sum()
    assert np.abs(curves.error - expected.error).max() <= LOESS_BOUND


def test_kind_follows_the_distinct_values_of_all_parts() -> None:
    """Ten distinct values in all (categorical) though each part has fewer, or eleven
    (numeric) though no part has more than four; inf is a category, not a value."""
    rng = np.random.default_rng(3)
    n_rows = 1_200
    ten = np.repeat(np.arange(10.0), n_rows // 10)
    eleven = np.sort(np.tile(np.arange(11.0), n_rows // 11 + 1)[:n_rows])
    with_inf = ten.copy()
    with_inf[::97] = np.inf
    p = rng.uniform(0.5, 1.0, size=n_rows)
    frame = pd.DataFrame({"y": (rng.uniform(size=n_rows) < p).astype(int), "p": p,
                          "ten": ten, "eleven": eleven, "with_inf": with_inf})
    result = variables_of_parts(parts_of(frame, 6, seed=0), "y", ["p"], ["0", "1"])
    ranking = rank_variables(frame[["ten", "eleven", "with_inf"]], frame["y"].to_numpy(), p,
                             n_permutations=0).set_index("variable")
    for variable in result.variables:
        assert variable.kind == ranking.loc[variable.variable, "kind"]
        assert variable.n == ranking.loc[variable.variable, "n"]
        assert variable.vece == pytest.approx(ranking.loc[variable.variable, "vece"], rel=1e-9)
    assert [v.kind for v in result.variables] == ["categorical", "numeric", "categorical"]
    assert np.inf in result["with_inf"].categories.tolist()


def test_columns_of_every_dtype_rank_as_in_memory() -> None:
    """Booleans, pandas categoricals, nullable integers and all-missing columns: the same
    kind, n, n_missing and VECE (NaN without rows) as rank_variables."""
    rng = np.random.default_rng(4)
    n_rows = 900
    p = rng.uniform(0.5, 1.0, size=n_rows)
    nullable = pd.array(rng.integers(0, 40, size=n_rows), dtype="Int64")
    nullable[::13] = pd.NA
    frame = pd.DataFrame({
        "y": (rng.uniform(size=n_rows) < p).astype(int), "p": p,
        "flag": rng.uniform(size=n_rows) < 0.3,
        "grade": pd.Categorical(rng.choice(["b", "a", "c"], size=n_rows)),
        "count": nullable, "empty": np.full(n_rows, np.nan),
        "nothing": pd.Series([None] * n_rows, dtype=object)})
    names = ["flag", "grade", "count", "empty", "nothing"]
    result = variables_of_parts(parts_of(frame, 4, seed=5), "y", ["p"], ["0", "1"], names)
    ranking = rank_variables(frame[names], frame["y"].to_numpy(), p,
                             n_permutations=0).set_index("variable")
    for variable in result.variables:
        expected = ranking.loc[variable.variable]
        assert (variable.kind, variable.n, variable.n_missing) == (
            expected["kind"], expected["n"], expected["n_missing"]), variable.variable
        if np.isnan(expected["vece"]):
            assert np.isnan(variable.vece)
        else:
            assert variable.vece == pytest.approx(expected["vece"], rel=1e-9)
            assert variable.vce_max == pytest.approx(expected["vce_max"], rel=1e-9, abs=1e-6)


def test_bad_features_are_refused(rows) -> None:
    with pytest.raises(CalibrationInputError, match="no feature column named 'nope'"):
        variables_of_parts([rows], "y", ["p_0", "p_1"], ["0", "1"], ["nope"])
    with pytest.raises(CalibrationInputError, match="not a feature"):
        variables_of_parts([rows], "y", ["p_0", "p_1"], ["0", "1"], ["p_1"])
    with pytest.raises(CalibrationInputError, match="n_bins"):
        variables_of_parts([rows], "y", ["p_0", "p_1"], ["0", "1"], n_bins=0)


def test_qcut_levels_are_the_levels_pandas_uses() -> None:
    for n_bins in (1, 3, 7, 10, 33):
        values = np.random.default_rng(n_bins).normal(size=997)
        expected = pd.qcut(values, n_bins, retbins=True, duplicates="drop")[1]
        np.testing.assert_array_equal(np.quantile(values, qcut_levels(n_bins)), expected)


SHAPES = ["normal", "ties", "crowded", "signed_zeros", "constant", "cauchy", "huge", "tiny",
          "two_values"]


def sample(shape: str, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    if shape == "normal":
        return rng.normal(3.0, 2.0, size=n_rows)
    if shape == "ties":
        return np.round(rng.normal(size=n_rows), 1)
    if shape == "crowded":  # distinct values a few ulps apart: many in one cell
        return 1.0 + rng.integers(0, 40, size=n_rows) * np.finfo(np.float64).eps
    if shape == "signed_zeros":
        return rng.choice([-0.0, 0.0, -1.5, 2.5, -1e-300], size=n_rows) * rng.choice(
            [1.0, 1.0, 3.0], size=n_rows)
    if shape == "constant":
        return np.full(n_rows, -7.25)
    if shape == "cauchy":
        return rng.standard_cauchy(size=n_rows)
    if shape == "huge":
        return rng.normal(size=n_rows) * 1e300
    if shape == "tiny":
        return rng.normal(size=n_rows) * 1e-310
    return rng.choice([-3.0, 8.0], size=n_rows, p=[0.9, 0.1])


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(n_rows=st.integers(1, 1_500), n_bins=st.integers(1, 25), n_parts=st.integers(1, 9),
       shape=st.sampled_from(SHAPES), n_cells=st.sampled_from([1 << 4, 1 << 16]),
       missing=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_edges_are_pandas_qcut_edges_bit_for_bit(n_rows, n_bins, n_parts, shape, n_cells,
                                                 missing, seed) -> None:
    """Three passes over random parts give pd.qcut's edges of all the finite values (16
    cells make many rows per cell: segments and target cells do the work), the same
    bins and variable_ece's VECE."""
    rng = np.random.default_rng(seed)
    values = sample(shape, n_rows, rng)
    if missing:
        values[rng.uniform(size=n_rows) < 0.1] = rng.choice([np.nan, np.inf, -np.inf])
    p = rng.uniform(0.5, 1.0, size=n_rows)
    frame = pd.DataFrame({"y": (rng.uniform(size=n_rows) < p).astype(int), "p": p,
                          "v": values})
    finite = np.isfinite(values)
    if not finite.any():
        return
    with patch.object(partitioned_variables_module, "N_CELLS", n_cells):
        result = variables_of_parts(parts_of(frame, n_parts, seed), "y", ["p"], ["0", "1"],
                                    ["v"], n_bins=n_bins, max_categories=0, curves=False)
    variable = result["v"]
    codes, edges = qcut_bins(values[finite], n_bins)
    assert variable.kind == "numeric" and variable.curves is None
    assert _same_floats(variable.edges, edges)
    np.testing.assert_array_equal(variable.bin_sums[:, 0],
                                  np.bincount(codes, minlength=variable.bin_sums.shape[0]))
    assert variable.vece == pytest.approx(variable_ece(values, frame["y"], p, n_bins=n_bins,
                                                       kind="numeric"), rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from(SHAPES), n_rows=st.integers(1, 3_000),
       n_cells=st.sampled_from([1 << 4, 1 << 10, 1 << 16]), seed=st.integers(0, 2**32 - 1))
def test_float_cells_are_a_monotone_map_within_their_bounds(shape, n_rows, n_cells,
                                                            seed) -> None:
    rng = np.random.default_rng(seed)
    values = sample(shape, n_rows, rng)
    keys = float_keys(values)
    half = n_rows // 2
    coarse = merge_coarse_counts(coarse_counts(keys[:half]), coarse_counts(keys[half:]))
    assert np.array_equal(coarse[0], coarse_counts(keys)[0])
    cells = FloatCells.of(*coarse, int(keys.min()), int(keys.max()), n_cells)
    assert cells.n_cells <= n_cells + coarse[0].size
    ordered = np.sort(np.concatenate([values, rng.normal(size=50) * 10.0 ** rng.integers(
        -300, 300, size=50), [-np.finfo(np.float64).max, np.finfo(np.float64).max]]))
    assert np.all(np.diff(cells.cells_of(ordered)) >= 0)
    assert np.all(float_keys(ordered)[1:] >= float_keys(ordered)[:-1])
    # the compiled lookup is the table arithmetic, key by key
    keys_of = float_keys(ordered)
    base, top, offset, shift = cells._tables[:, (keys_of >> COARSE_SHIFT) + (1 << 15)]
    assert np.array_equal(cells.cells_of_keys(keys_of),
                          offset + ((np.clip(keys_of, base, top) - base) >> shift))
    low, high = cells.bounds()
    cell = cells.cells_of(values)
    assert np.all((low[cell] <= values) & (values <= high[cell]))
    assert _same_floats(key_floats(keys), values)
    assert cells.counts(values).sum() == n_rows


def _bound_case(shape: str, n_rows: int, span: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    if shape == "zero_inflated":
        values = np.where(rng.uniform(size=n_rows) < 0.4, 0.0, rng.exponential(size=n_rows))
    elif shape == "bimodal":
        values = np.where(rng.uniform(size=n_rows) < 0.3, rng.normal(-3, 0.5, n_rows),
                          rng.normal(2, 1, n_rows))
    elif shape == "integers":
        values = rng.poisson(30, size=n_rows).astype(np.float64)
    else:
        values = sample(shape, n_rows, rng)
    rank = (np.argsort(np.argsort(values)) + 0.5) / n_rows
    p = np.clip(0.5 + 0.45 * np.sin(5 * rank), 0.01, 0.99)
    truth = np.clip(p + 0.6 * np.cos(3 * rank) * p * (1 - p), 0, 1)
    frame = pd.DataFrame({"y": (rng.uniform(size=n_rows) < truth).astype(int), "p": p,
                          "v": values})
    result = variables_of_parts(parts_of(frame, 7, seed=2), "y", ["p"], ["0", "1"], ["v"],
                                span=span, max_categories=0)
    _check_curves(result["v"].curves, loess_curves(values, frame["y"], p, span=span))


def test_windows_ending_on_ties_are_as_in_memory() -> None:
    """Poisson integers at span 0.2: windows end on tied values, which weigh 0 (or a
    rounding's worth) in memory; the binned bandwidth ends there exactly too."""
    _bound_case("integers", 3_000, 0.2, seed=0)


def test_windows_of_only_tied_rows_are_widened_as_in_memory() -> None:
    """40% of the rows at 0, the others from 0.3 on, span 0.2: just above 0 the nearest q
    rows are all tied at the window's end (weight 0). Both paths widen the window past
    them to the same bandwidth, so the fits there come from the tied rows (not the 0/0
    fitted as 0 before). Deeper in the gap both extrapolate one-sidedly, as LOESS does."""
    rng = np.random.default_rng(0)
    n_rows = 3_000
    values = np.where(rng.uniform(size=n_rows) < 0.4, 0.0, 0.3 + rng.exponential(2, n_rows))
    p = rng.uniform(0.3, 0.95, n_rows)
    frame = pd.DataFrame({"y": (rng.uniform(size=n_rows) < p).astype(int), "p": p,
                          "v": values})
    binned = variables_of_parts(parts_of(frame, 7, seed=2), "y", ["p"], ["0", "1"], ["v"],
                                span=0.2, max_categories=0)["v"].curves
    in_memory = loess_curves(values, frame["y"], p, span=0.2)
    near = (in_memory.x > 0) & (in_memory.x < 0.05)
    assert near.sum() >= 3
    for field in ("error", "predicted_error"):
        got, expected = getattr(binned, field)[near], getattr(in_memory, field)[near]
        assert np.abs(got - expected).max() <= LOESS_BOUND, field
        assert (expected > 0.03).all(), field
    # one distinct value in the window: the minimum-norm quadratic in d = (x - x0) / h
    # gives the tied mean / (1 + d^2 + d^4) at x0, with h half the gap 0 .. first other value
    d = in_memory.x[near] / (np.min(values[values > 0]) / 2)
    expected = (1 - np.maximum(p, 1 - p)[values == 0].mean()) / (1 + d**2 + d**4)
    np.testing.assert_allclose(in_memory.predicted_error[near], expected, rtol=1e-9)


def test_points_in_a_gap_of_v_are_left_out_alike() -> None:
    """A sentinel 999 beside values in [0, 60], in 7 parts: the binned path leaves out the
    points whose fit is less certain than one row, as in memory. Fits agree within the
    bound; in the gap, where the drawn bands are nearly +/-1 wide, within 1% of their
    half-width (measured: 0.57%)."""
    rng = np.random.default_rng(5)
    n_rows = 20_000
    values = np.where(rng.uniform(size=n_rows) < 0.1, 999.0, rng.uniform(0, 60, n_rows))
    p = rng.uniform(0.5, 0.99, n_rows)
    frame = pd.DataFrame({"y": (rng.uniform(size=n_rows) < p).astype(int), "p": p,
                          "v": values})
    for span in (0.8, 0.3):
        result = variables_of_parts(parts_of(frame, 7, seed=2), "y", ["p"], ["0", "1"], ["v"],
                                    span=span, max_categories=0)
        expected = loess_curves(values, frame["y"], p, span=span)
        got = result["v"].curves
        drawn = ~np.isnan(expected.error)
        assert (~drawn).sum() > 100
        for field in CURVE_FIELDS:
            np.testing.assert_array_equal(np.isnan(getattr(got, field)), ~drawn, err_msg=field)
        for fit, low, high in (("error", "error_low", "error_high"), (
                "predicted_error", "predicted_error_low", "predicted_error_high")):
            center = getattr(expected, fit)[drawn]
            assert np.abs(getattr(got, fit)[drawn] - center).max() <= LOESS_BOUND
            half = getattr(expected, high)[drawn] - center
            for edge in (low, high):
                difference = np.abs(getattr(got, edge)[drawn] - getattr(expected, edge)[drawn])
                assert (difference <= np.maximum(LOESS_BOUND, 0.01 * half)).all(), edge
        assert got.vce_max == pytest.approx(expected.vce_max, abs=LOESS_BOUND)


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["normal", "cauchy", "ties", "zero_inflated", "bimodal",
                                   "integers"])
@pytest.mark.parametrize("span", [0.8, 0.2, 0.05])
def test_curves_within_the_bound_on_larger_tables(shape, span) -> None:
    """100,000 rows in 7 parts, variables of several shapes: every curve and band within
    LOESS_BOUND of loess_curves on all rows (measured: at most 1.7e-4)."""
    _bound_case(shape, 100_000, span, seed=11)


def test_result_is_frozen(rows) -> None:
    result = variables_of_parts([rows.iloc[:500]], "y", ["p_0", "p_1"], ["0", "1"],
                                ["colour"])
    assert isinstance(result, PartitionedVariables)
    with pytest.raises(AttributeError):
        result.n_bins = 3  # type: ignore[misc]
