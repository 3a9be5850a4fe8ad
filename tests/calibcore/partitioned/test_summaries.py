"""Mergeable summaries: measures of merged partition summaries equal the
in-memory measures of all rows, whatever the partitioning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore import metrics
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import binned_reliability, global_measures
from calibcore.metrics._resampling import cell_columns
from calibcore.metrics._weighted_measures import WeightedMeasures
from calibcore.partitioned import (
    CELL_ERROR_BOUND,
    FROM_CELLS,
    BinnedSummary,
    CellSummary,
    merge_all,
)


def in_memory(labels: np.ndarray, proba: np.ndarray, n_bins: int) -> dict[str, float]:
    out = {
        "accuracy": metrics.accuracy(labels, proba),
        "nll": metrics.negative_log_likelihood(labels, proba),
        "brier": metrics.brier_score(labels, proba),
        "ece": metrics.expected_calibration_error(labels, proba, n_bins=n_bins),
        "mce": metrics.maximum_calibration_error(labels, proba, n_bins=n_bins),
        "classwise_ece": metrics.classwise_expected_calibration_error(labels, proba,
                                                                      n_bins=n_bins),
        "binned_ece_plus_width": metrics.binned_ece_plus_width(labels, proba, n_bins=n_bins),
    }
    if proba.shape[1] == 2:
        out["binary_brier"] = metrics.binary_brier_score(labels, proba)
        out["positive_ece"] = metrics.expected_calibration_error(labels, proba, n_bins=n_bins,
                                                                 view="positive")
    return out


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(n_classes=st.integers(2, 5), n_rows=st.integers(1, 400), n_bins=st.integers(1, 30),
       n_cuts=st.integers(0, 16), rounded=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_merged_summaries_equal_the_measures_of_all_rows(
        n_classes: int, n_rows: int, n_bins: int, n_cuts: int, rounded: bool,
        seed: int) -> None:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(n_classes, 0.7), size=n_rows)
    if rounded:  # scores on the bin edges and ties between rows
        proba = np.round(proba, 1)
        proba[:, -1] = 1.0 - proba[:, :-1].sum(axis=1)
        proba = np.clip(proba, 0.0, 1.0)
        proba /= proba.sum(axis=1, keepdims=True)
    labels = rng.integers(0, n_classes, size=n_rows)
    cuts = np.sort(rng.integers(0, n_rows + 1, size=n_cuts))  # empty parts included
    parts = np.split(np.arange(n_rows), cuts)
    merged = merge_all(BinnedSummary.of(labels[rows], proba[rows], n_bins=n_bins)
                       for rows in parts)
    expected = in_memory(labels, proba, n_bins)
    got = merged.measures()
    assert merged.n_rows == n_rows and got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    for classwise in (False, True):
        diagrams = binned_reliability(labels, proba, n_bins=n_bins,
                                      view="classwise" if classwise else "top_label")
        for got_diagram, diagram in zip(merged.diagrams(classwise=classwise), diagrams,
                                        strict=True):
            assert got_diagram.label == diagram.label and got_diagram.n == diagram.n
            np.testing.assert_array_equal(got_diagram.count, diagram.count)
            for part in ("edges", "mean_score", "observed", "observed_low", "observed_high"):
                np.testing.assert_allclose(getattr(got_diagram, part), getattr(diagram, part),
                                           rtol=1e-9, atol=1e-12, equal_nan=True)


def test_a_binary_summary_of_one_dimensional_scores_and_its_refusals() -> None:
    labels, positive = np.array([0, 1, 1, 0]), np.array([0.2, 0.9, 0.6, 0.0])
    summary = BinnedSummary.of(labels, positive, n_bins=5)
    assert summary.measures()["ece"] == pytest.approx(
        metrics.expected_calibration_error(labels, positive, n_bins=5), abs=1e-15)
    empty = BinnedSummary.of(np.array([], dtype=int), np.array([]), n_bins=5)
    assert empty.merge(summary).measures() == summary.measures()
    with pytest.raises(CalibrationInputError, match="no rows"):
        empty.measures()
    with pytest.raises(CalibrationInputError, match="cannot merge"):
        summary.merge(BinnedSummary.empty(3, 5))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(n_classes=st.integers(2, 4), n_rows=st.integers(1, 300), n_bins=st.integers(1, 20),
       n_cuts=st.integers(0, 8), seed=st.integers(0, 2**32 - 1))
def test_merged_cells_are_the_cells_of_all_rows(n_classes: int, n_rows: int, n_bins: int,
                                                n_cuts: int, seed: int) -> None:
    """Merging the cell summaries of any parts gives the cells of all rows: the cells
    :func:`row_cells` numbers, in its order, with its counts, and the sums of each
    row quantity over the rows of each cell."""
    rng = np.random.default_rng(seed)
    proba = np.round(rng.dirichlet(np.full(n_classes, 0.7), size=n_rows), 2)
    proba /= proba.sum(axis=1, keepdims=True)
    labels = rng.integers(0, n_classes, size=n_rows)
    parts = np.split(np.arange(n_rows), np.sort(rng.integers(0, n_rows + 1, size=n_cuts)))
    merged = CellSummary.empty(n_classes, n_bins)
    for rows in parts:
        merged = merged.merge(CellSummary.of(labels[rows], proba[rows], n_bins=n_bins))
    columns, _ = cell_columns(labels, proba, n_bins)
    _, groups, counts = np.unique(np.column_stack(columns), axis=0, return_inverse=True,
                                  return_counts=True)
    groups = groups.ravel()
    assert merged.n_rows == n_rows
    np.testing.assert_array_equal(merged.sums["rows"].to_numpy(), counts)
    quantities = WeightedMeasures.of_rows(labels, proba, "top_label", n_bins,
                                          "equal_width").quantities()
    whole = CellSummary.of(labels, proba, n_bins=n_bins)
    for name, values in quantities.items():
        np.testing.assert_allclose(merged.sums[name].to_numpy(),
                                   np.bincount(groups, weights=values), rtol=1e-12, atol=1e-12)
        # one part's cells are summed in row order, as the in-memory cells: bit for bit
        np.testing.assert_array_equal(whole.sums[name].to_numpy(),
                                      np.bincount(groups, weights=values))


@pytest.mark.parametrize(("n_rows", "n_classes", "concentration", "temper"), [
    (50_000, 2, 0.8, 1.0), (120_000, 2, 2.0, 1.5), (120_000, 2, 0.3, 0.7),
    (60_000, 3, 0.8, 1.2),
])
def test_bin_free_measures_on_the_cells_are_within_the_stated_bound(
        n_rows: int, n_classes: int, concentration: float, temper: float) -> None:
    """intCE, kCE and smooth ECE computed on the resampling cells (each row's scores
    moved to its cell's mean) stay within CELL_ERROR_BOUND of the exact values."""
    rng = np.random.default_rng(n_rows + n_classes)
    proba = rng.dirichlet(np.full(n_classes, concentration), size=n_rows)
    tempered = proba**temper / (proba**temper).sum(axis=1, keepdims=True)
    labels = (rng.random(n_rows)[:, None] > np.cumsum(tempered, axis=1)).sum(axis=1)
    cells = CellSummary.of(labels, proba)
    got = cells.measures({}, list(FROM_CELLS), n_bootstrap=0)
    exact = global_measures(labels, proba, measures=list(FROM_CELLS), n_bootstrap=0)
    for key in FROM_CELLS:
        assert abs(got[key].value - exact[key].value) <= CELL_ERROR_BOUND, key
        assert got[key].note.startswith("computed on the")
