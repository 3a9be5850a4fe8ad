"""Bootstrap resampling of large data sets through a fine grid of cells, or an
m-out-of-n subsample (calibcore.metrics._resampling), checked against resampling rows."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.metrics import (
    MEASURES,
    assign_bins,
    equal_mass_edges,
    global_measures,
    weighted_equal_mass_edges,
)
from calibcore.metrics._cell_keys import cell_keys
from calibcore.metrics._resampling import (
    GRID_CELLS,
    ROW_BOOTSTRAP_MAX_ROWS,
    SUBSAMPLE_ROWS,
    ResamplingPlan,
    cell_columns,
    resampling_plan,
    row_cells,
)
from calibcore.metrics._weighted_measures import WeightedMeasures
from calibcore.metrics.binning import equal_width_edges, sorted_equal_mass_edges
from tests.calibcore.metrics.test_interval_coverage import (
    COVERED,
    sample_family,
    true_ece,
    true_kce,
    true_smooth_ece,
)
from tests.replications import coverage

BINNED = ("ece", "mce", "classwise_ece", "binned_ece_plus_width", "brier", "binary_brier",
          "nll", "accuracy")
POSITIONAL = ("interval_calibration_error", "laplace_kernel_calibration_error", "smooth_ece")


def binary_rows(n_rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    proba = 1.0 / (1.0 + np.exp(-rng.normal(scale=2.0, size=n_rows)))
    labels = (rng.random(n_rows) < proba**1.3).astype(np.intp)
    return labels, np.column_stack([1.0 - proba, proba])


@settings(max_examples=300)
@given(seed=st.integers(0, 2**31), n_scores=st.integers(1, 200), n_bins=st.integers(1, 40),
       rounded=st.booleans())
def test_weighted_equal_mass_edges_equal_those_of_the_repeated_scores(
        seed, n_scores, n_bins, rounded) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.random(n_scores)
    if rounded:  # ties, as decision trees give
        scores = np.round(scores, 1)
    counts = rng.poisson(rng.uniform(0.3, 3.0), size=n_scores).astype(np.float64)
    counts[0] += 1  # at least one row
    expected = equal_mass_edges(np.repeat(scores, counts.astype(np.intp)), n_bins)
    np.testing.assert_array_equal(weighted_equal_mass_edges(scores, counts, n_bins), expected)


@settings(max_examples=300)
@given(seed=st.integers(0, 2**31), n_scores=st.integers(1, 3000), n_bins=st.integers(1, 120),
       decimals=st.sampled_from([1, 3, 17]))
def test_sorted_equal_mass_edges_are_numpys_quantile_edges(
        seed, n_scores, n_bins, decimals) -> None:
    # read off the sorted scores, they must be np.quantile's edges of the unsorted scores
    # (equal_mass_edges) bit for bit, ties and all
    scores = np.round(np.random.default_rng(seed).random(n_scores), decimals)
    expected = equal_mass_edges(scores, n_bins)
    got = sorted_equal_mass_edges(np.sort(scores), n_bins)
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("n_bins", [1, 10, 15, 100])
def test_no_cell_straddles_a_label_or_a_bin_edge(n_bins: int) -> None:
    labels, proba = binary_rows(60_000, seed=n_bins)
    proba[:50] = np.round(proba[:50], 1)  # scores exactly on bin edges
    proba[:50, 0] = 1.0 - proba[:50, 1]
    groups, counts = row_cells(labels, proba, n_bins)
    assert counts.sum() == labels.size and counts.size <= labels.size // 2
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    per_row = [labels, assign_bins(proba.max(axis=1), edges)] + [
        assign_bins(proba[:, k], edges) for k in range(2)]
    for values in per_row:  # one value per cell: its smallest equals its largest
        low = np.full(counts.size, np.iinfo(np.int64).max)
        high = np.full(counts.size, np.iinfo(np.int64).min)
        np.minimum.at(low, groups, values)
        np.maximum.at(high, groups, values)
        np.testing.assert_array_equal(low, high)
    # within a cell, scores lie within a cell's width of each other
    spread = np.zeros(counts.size)
    np.maximum.at(spread, groups, proba[:, 1])
    smallest = np.ones(counts.size)
    np.minimum.at(smallest, groups, proba[:, 1])
    sub_cell = 1.0 / (n_bins * -(-GRID_CELLS // n_bins))
    assert np.max(spread - smallest) <= sub_cell * (1 + 1e-9)


@pytest.mark.parametrize(("n_classes", "n_bins", "values"), [
    (2, 15, "continuous"), (2, 15, "on edges"), (2, 1, "on edges"), (2, 100, "rounded"),
    (3, 10, "on edges"), (5, 7, "rounded")])
def test_compiled_cell_keys_are_the_numbered_columns(n_classes: int, n_bins: int,
                                                     values: str) -> None:
    # the one-pass keys of row_cells against the cell's coordinates of cell_columns,
    # numbered in their lexicographic order with NumPy, scores on bin and sub-cell edges
    # (where a division could round either way) included
    rng = np.random.default_rng(n_classes * n_bins)
    n = 6_000  # above the size from which assign_bins divides instead of searching
    per_bin = -(-GRID_CELLS // n_bins)
    proba = rng.dirichlet(np.ones(n_classes), n)
    if values == "on edges":
        grid = n_bins * per_bin
        proba[:, 0] = rng.integers(0, grid + 1, n) / grid
        if n_classes == 2:
            proba[:, 1] = 1.0 - proba[:, 0]
    elif values == "rounded":
        proba = proba.round(2)
    labels = rng.integers(0, n_classes, n)
    columns, sizes = cell_columns(labels, proba, n_bins)
    expected = np.zeros(n, dtype=np.int64)
    for column, size in zip(columns, sizes, strict=True):
        expected = expected * size + column
    keys = cell_keys(labels.astype(np.int64), proba, equal_width_edges(n_bins), per_bin)
    np.testing.assert_array_equal(keys, expected)


def test_merged_cells_keep_binned_measures_and_move_the_others_by_little() -> None:
    labels, proba = binary_rows(100_000)
    rows = WeightedMeasures.of_rows(labels, proba, "top_label", 15, "equal_width")
    groups, counts = row_cells(labels, proba, 15)
    cells = rows.grouped(groups, counts)
    keys = [key for key in MEASURES if key != "smooth_calibration_error"]
    exact = rows.rows(keys, np.ones((1, labels.size)), skip_smce=True)
    merged = cells.rows(keys, counts[None, :], skip_smce=True)
    for key in BINNED:
        assert merged[key][0] == pytest.approx(exact[key][0], abs=1e-12), key
    for key in POSITIONAL:  # scores move by less than a cell width
        assert merged[key][0] == pytest.approx(exact[key][0], abs=2.0 / GRID_CELLS), key


@pytest.mark.slow
def test_cell_resamples_spread_like_row_resamples() -> None:
    """The same bootstrap distribution as resampling rows: the spread (standard deviation
    over 400 resamples, itself known to about 4%) of every measure agrees within 12%."""
    labels, proba = binary_rows(40_000, seed=3)
    rows = WeightedMeasures.of_rows(labels, proba, "top_label", 15, "equal_mass")
    plan = resampling_plan(labels, proba, 15, 0)
    assert plan.method == "cells"
    cells = rows.grouped(plan.groups, plan.counts)
    keys = [key for key in MEASURES if key != "smooth_calibration_error"]
    by_cells = {key: [] for key in keys}
    by_rows = {key: [] for key in keys}
    for weights in plan.blocks(400, 1):
        for key, values in cells.rows(keys, weights, skip_smce=True).items():
            by_cells[key].append(values)
    for weights in ResamplingPlan("rows", labels.size).blocks(400, 2):
        for key, values in rows.rows(keys, weights, skip_smce=True).items():
            by_rows[key].append(values)
    for key in keys:
        cell_spread = np.std(np.concatenate(by_cells[key]))
        row_spread = np.std(np.concatenate(by_rows[key]))
        assert cell_spread == pytest.approx(row_spread, rel=0.12), key


def test_the_plan_depends_on_the_size_and_the_classes() -> None:
    labels, proba = binary_rows(ROW_BOOTSTRAP_MAX_ROWS)
    assert resampling_plan(labels, proba, 15, 0).method == "rows"
    labels, proba = binary_rows(80_000)
    assert resampling_plan(labels, proba, 15, 0).method == "cells"
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(6), size=50_000)  # no two rows share a cell
    labels = rng.integers(0, 6, 50_000)
    plan = resampling_plan(labels, proba, 15, 0)
    assert plan.method == "subsample" and plan.groups.size == SUBSAMPLE_ROWS
    assert plan.scale == pytest.approx(np.sqrt(SUBSAMPLE_ROWS / 50_000))
    np.testing.assert_array_equal(plan.groups, resampling_plan(labels, proba, 15, 0).groups)


@pytest.mark.slow
def test_large_multiclass_intervals_by_subsample_contain_their_values() -> None:
    rng = np.random.default_rng(5)
    logits = rng.normal(scale=2.0, size=(30_000, 5))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    # drawn from the reversed probabilities: badly miscalibrated
    cumulative = np.cumsum(proba[:, ::-1], axis=1)
    labels = np.minimum((cumulative < rng.random((30_000, 1))).sum(axis=1), 4)
    result = global_measures(labels, proba, n_bootstrap=100, interval="hybrid")
    assert result.resampling.startswith("m-out-of-n bootstrap: 20,000 of 30,000 rows")
    for estimate in result.measures:
        if estimate.low is not None:
            assert estimate.low <= estimate.value <= estimate.high, estimate
    # means of a loss: the scaled spread is that of all 30,000 rows, 2 x 1.96 sd / sqrt(n)
    rows = np.arange(labels.size)
    losses = {"accuracy": (proba.argmax(axis=1) == labels).astype(float),
              "nll": -np.log(proba[rows, labels]),
              "brier": np.square(proba).sum(axis=1) - 2 * proba[rows, labels] + 1}
    for key, loss in losses.items():
        width = result[key].high - result[key].low
        assert width == pytest.approx(3.92 * loss.std() / np.sqrt(loss.size), rel=0.25), key


def test_results_of_a_large_file_are_seeded_and_say_how_they_were_resampled() -> None:
    labels, proba = binary_rows(45_000, seed=9)
    first = global_measures(labels, proba, n_bootstrap=20, random_state=3, interval="basic",
                            smce_max_rows=0)
    assert first == global_measures(labels, proba, n_bootstrap=20, random_state=3,
                                    interval="basic", smce_max_rows=0)
    assert first.resampling.startswith("resampled through")
    for estimate in first.measures:
        if estimate.low is not None:
            assert estimate.low <= estimate.value <= estimate.high, estimate


@pytest.mark.slow
def test_cell_intervals_cover_the_truth_at_twenty_five_thousand_rows() -> None:
    """The coverage check of test_interval_coverage at a size resampled through cells
    (120 replications at most, to keep the test near a minute)."""
    truth = {"ece": true_ece(), "smooth_ece": true_smooth_ece(),
             "laplace_kernel_calibration_error": true_kce()}
    rng = np.random.default_rng(12)

    def covered(replication: int) -> dict[str, bool]:
        labels, proba = sample_family(rng, 25_000)
        result = global_measures(labels, proba, measures=list(COVERED), n_bootstrap=200,
                                 random_state=replication, interval="hybrid")
        assert result.resampling.startswith("resampled through")
        return {key: result[key].low <= truth[key] <= result[key].high for key in COVERED}

    # 120 replications, or the first 60 when every interval covered in 94% of them
    rates = coverage(covered, 120)
    assert all(value >= 0.90 for value in rates.values()), rates


def test_blocks_drawn_ahead_are_the_blocks_drawn_in_turn() -> None:
    # the cells' resamples are drawn on a thread one block ahead: the same seeded stream
    # must give the same blocks, in order; a consumer that stops early stops the drawing
    from calibcore.metrics._resampling import drawn_ahead

    counts = np.arange(1.0, 400.0)
    plan = ResamplingPlan("cells", int(counts.sum()), np.zeros(1, dtype=np.intp), counts)
    expected = list(plan.blocks(95, 7))
    got = list(drawn_ahead(plan.blocks(95, 7)))
    assert len(got) == len(expected) == 5
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.tobytes() == theirs.tobytes()
    drawn = []

    def counted() -> Iterator[np.ndarray]:
        for block in plan.blocks(95, 7):
            drawn.append(block)
            yield block

    for _ in drawn_ahead(counted()):
        break
    assert len(drawn) == 2  # the one used and the one drawn ahead, no more
