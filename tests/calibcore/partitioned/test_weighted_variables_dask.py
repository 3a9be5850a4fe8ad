"""The Dask variables ranking with row weights: on a LocalCluster and on pandas parts, the
same kinds and VECE as rank_variables / variable_ece(sample_weight=) on all rows, the
equal-weight edges of weighted_qcut_bins (bit for bit for integer weights), integer
weights = the rows repeated by their weights, weights all 1 = no weights, and LOESS curves
within the stated bound of loess_curves(sample_weight=). Golden values come from the
in-memory functions and the repeated rows, computed here."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.distributed import Client

from calibcore.partitioned import partitioned_variables, variables_of_parts
from calibcore.partitioned._binned_loess import LOESS_BOUND
from calibcore.variable import loess_curves, rank_variables, variable_ece
from calibcore.variable._binning import weighted_qcut_bins
from tests.calibcore.partitioned.test_partitioned_variables import parts_of, table

FEATURES = ["normal", "heavy", "levels", "colour", "gappy"]
CLASSES = ["0", "1"]


def weighted_table(n_rows: int, seed: int, integer: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed + 100)
    frame = table(n_rows, seed)
    weights = (rng.integers(0, 4, n_rows).astype(np.float64) if integer
               else rng.gamma(2.0, 0.7, n_rows) * (rng.uniform(size=n_rows) > 0.1))
    return frame.assign(w=weights)


def _in_memory(frame: pd.DataFrame, weights: np.ndarray | None) -> pd.DataFrame:
    return rank_variables(frame[FEATURES], frame["y"].to_numpy(),
                          frame[["p_0", "p_1"]].to_numpy(), n_permutations=0,
                          sample_weight=weights).set_index("variable")


def _finite(values: pd.Series, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    numbers = values.to_numpy(dtype=np.float64)
    finite = np.isfinite(numbers)
    return numbers[finite], weights[finite]


@pytest.mark.parametrize("integer", [True, False])
def test_weighted_parts_equal_the_in_memory_weighted_ranking(integer) -> None:
    frame = weighted_table(3_000, seed=1, integer=integer)
    weights = frame["w"].to_numpy()
    result = variables_of_parts(parts_of(frame, 5, seed=3), "y", ["p_0", "p_1"], CLASSES,
                                FEATURES, weight="w", curves=False)
    expected = _in_memory(frame, weights)
    assert result.weighted
    labels, proba = frame["y"].to_numpy(), frame[["p_0", "p_1"]].to_numpy()
    for variable in result.variables:
        row = expected.loc[variable.variable]
        assert variable.kind == row["kind"], variable.variable
        assert (variable.n, variable.n_missing) == (row["n"], row["n_missing"])
        assert variable.vece == pytest.approx(row["vece"], rel=1e-9, abs=1e-12)
        assert variable.vece == pytest.approx(variable_ece(
            frame[variable.variable], labels, proba, kind=variable.kind,
            sample_weight=weights), rel=1e-9, abs=1e-12)
        if variable.kind == "categorical":
            assert variable.vce_max == pytest.approx(row["vce_max"], rel=1e-9)
            assert variable.v_star == row["v_star"]
            continue
        values, kept = _finite(frame[variable.variable], weights)
        edges = weighted_qcut_bins(values, kept, 10)[1]
        if integer:
            np.testing.assert_array_equal(variable.edges, edges)
        else:
            np.testing.assert_allclose(variable.edges, edges, rtol=0, atol=0)
        assert variable.bin_sums[:, 4].sum() == pytest.approx(kept.sum(), rel=1e-12)
        assert int(variable.bin_sums[:, 0].sum()) == variable.n


def test_integer_weights_are_the_repeated_rows_and_ones_are_no_weights() -> None:
    frame = weighted_table(2_500, seed=2, integer=True)
    repeated = frame.loc[frame.index.repeat(frame["w"].astype(int))].reset_index(drop=True)
    ours = variables_of_parts(parts_of(frame, 4, seed=5), "y", ["p_0", "p_1"], CLASSES,
                              FEATURES, weight="w", curves=False)
    theirs = variables_of_parts(parts_of(repeated.drop(columns="w"), 3, seed=6), "y",
                                ["p_0", "p_1"], CLASSES, FEATURES, curves=False)
    ones = variables_of_parts(parts_of(frame.assign(w=1.0), 4, seed=5), "y", ["p_0", "p_1"],
                              CLASSES, FEATURES, weight="w", curves=False)
    plain = variables_of_parts(parts_of(frame.drop(columns="w"), 4, seed=5), "y",
                               ["p_0", "p_1"], CLASSES, FEATURES, curves=False)
    for mine, other, one, none in zip(ours.variables, theirs.variables, ones.variables,
                                      plain.variables, strict=True):
        assert mine.kind == other.kind
        assert mine.vece == pytest.approx(other.vece, rel=1e-12, abs=1e-15), mine.variable
        assert one.vece == pytest.approx(none.vece, rel=1e-12, abs=1e-15), one.variable
        if mine.kind == "numeric":
            np.testing.assert_array_equal(mine.edges, other.edges)
            np.testing.assert_array_equal(one.edges, none.edges)
            # each bin's weight is the repeated rows' count in it
            np.testing.assert_array_equal(mine.bin_sums[:, 4], other.bin_sums[:, 0])


def test_weighted_vece_by_hand_on_a_categorical_variable() -> None:
    """sum_c |sum w (p_err - err)| / sum w over the categories, written out."""
    frame = weighted_table(800, seed=4, integer=False)
    result = variables_of_parts(parts_of(frame, 3, seed=1), "y", ["p_0", "p_1"], CLASSES,
                                ["colour"], weight="w")
    p = frame[["p_0", "p_1"]].to_numpy()
    predicted = 1 - p.max(axis=1)
    error = (p.argmax(axis=1) != frame["y"].to_numpy()).astype(float)
    w = frame["w"].to_numpy()
    by_hand = sum(abs((w * (predicted - error))[frame["colour"] == c].sum())
                  for c in ["red", "green", "blue", "grey"]) / w.sum()
    assert result["colour"].vece == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("integer", [True, False])
def test_dask_weighted_curves_within_the_bound(dask_cluster, integer) -> None:
    frame = weighted_table(4_000, seed=0, integer=integer)
    weights = frame["w"].to_numpy()
    with Client(dask_cluster):
        result = partitioned_variables(dd.from_pandas(frame, npartitions=3), "y",
                                       ["p_0", "p_1"], CLASSES, ["normal", "gappy"],
                                       weight="w")
    labels, proba = frame["y"].to_numpy(), frame[["p_0", "p_1"]].to_numpy()
    for variable in result.variables:
        expected = loess_curves(frame[variable.variable], labels, proba, sample_weight=weights)
        assert variable.vece == pytest.approx(variable_ece(
            frame[variable.variable], labels, proba, sample_weight=weights), rel=1e-9)
        got = variable.curves
        assert got is not None
        np.testing.assert_allclose(got.x, expected.x, rtol=0, atol=1e-12)
        drawn = ~np.isnan(expected.error) & ~np.isnan(got.error)
        assert drawn.mean() > 0.9
        for field in ("error", "predicted_error", "error_low", "error_high"):
            difference = np.abs(getattr(got, field) - getattr(expected, field))[drawn].max()
            assert difference <= LOESS_BOUND, (variable.variable, field, difference)
        assert abs(got.vce_max - expected.vce_max) <= LOESS_BOUND


@pytest.mark.slow
def test_dask_weighted_ranking_on_the_cluster(dask_cluster) -> None:
    """The ranking table on a LocalCluster (3 partitions, negatives weighing 1 / 0.25 times
    the weight column) = rank_variables(sample_weight=) of the same rows."""
    frame = weighted_table(1_500, seed=6, integer=False)
    applied = frame["w"].to_numpy() * np.where(frame["y"].to_numpy() == 0, 4.0, 1.0)
    with Client(dask_cluster):
        result = partitioned_variables(dd.from_pandas(frame, npartitions=3), "y",
                                       ["p_0", "p_1"], CLASSES, ["normal", "colour"],
                                       weight="w", negative_rate=0.25, curves=False)
    expected = rank_variables(frame[["normal", "colour"]], frame["y"].to_numpy(),
                              frame[["p_0", "p_1"]].to_numpy(), n_permutations=0,
                              sample_weight=applied)
    table = result.ranking()
    assert list(table["variable"]) == list(expected["variable"])
    np.testing.assert_allclose(table["vece"], expected["vece"], rtol=1e-9, atol=1e-12)
    assert list(table["n"]) == list(expected["n"])


def test_few_weighted_rows_are_smoothed_exactly() -> None:
    """At most N_EXACT rows: gathered with their weights and smoothed as
    loess_curves(sample_weight=) smooths them, exactly."""
    frame = weighted_table(700, seed=8, integer=False)
    result = variables_of_parts(parts_of(frame, 4, seed=2), "y", ["p_0", "p_1"], CLASSES,
                                ["normal", "gappy"], weight="w", span=0.5, n_points=60)
    labels, proba = frame["y"].to_numpy(), frame[["p_0", "p_1"]].to_numpy()
    for variable in result.variables:
        expected = loess_curves(frame[variable.variable], labels, proba, span=0.5,
                                n_points=60, sample_weight=frame["w"].to_numpy())
        assert variable.curves is not None and variable.curves.exact
        for field in ("x", "error", "error_low", "error_high", "predicted_error",
                      "histogram_counts"):
            np.testing.assert_array_equal(getattr(variable.curves, field),
                                          getattr(expected, field), err_msg=field)
        assert variable.curves.n == expected.n


def test_zero_total_weight_gives_no_vece() -> None:
    """A variable whose present rows all weigh 0 has no weighted VECE (NaN), as the
    in-memory function refuses it."""
    frame = weighted_table(600, seed=9, integer=True)
    frame.loc[frame["colour"] == "red", "w"] = 0.0
    frame["only_red"] = np.where(frame["colour"] == "red", frame["normal"], np.nan)
    result = variables_of_parts(parts_of(frame, 3, seed=4), "y", ["p_0", "p_1"], CLASSES,
                                ["only_red", "colour"], weight="w")
    assert np.isnan(result["only_red"].vece) and result["only_red"].curves is None
    assert result["only_red"].n == int((frame["colour"] == "red").sum())
    assert np.isfinite(result["colour"].vece) and result["colour"].v_star != "red"
