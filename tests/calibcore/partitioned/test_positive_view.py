"""The positive view (P(class 1) against 1[y = 1]) of a partitioned binary table: every
measure, diagram, interval and the test of calibration merged from the partitions equal
calibcore's in-memory ones on the same rows, whatever the partitioning (empty parts too)."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore import metrics
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import (
    binned_reliability,
    calibration_tests_by_view,
    consistency_resampling_test,
    global_measures,
    smooth_reliability,
)
from calibcore.partitioned import (
    CELL_ERROR_BOUND,
    BinnedSummary,
    CellSummary,
    ScoreSummary,
    calibration_tests_of_scores,
    measures_with_intervals,
    merge_all,
    partitioned_equal_mass,
    partitioned_measures,
)
from tests.calibcore.metrics.test_metrics import brute_force_ece

#: The measures of the positive view that the summaries give exactly (smCE is not one).
EXACT = ("accuracy", "nll", "brier", "binary_brier", "ece", "mce", "classwise_ece",
         "binned_ece_plus_width", "interval_calibration_error",
         "laplace_kernel_calibration_error", "smooth_ece")


def planted(n_rows: int, power: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """P(class 1) ~ Beta(2, 2) and y ~ Bernoulli(p ** power): P(class 1) runs high for
    power > 1 (the top-label view folds that away), low for power < 1."""
    rng = np.random.default_rng(seed)
    positive = rng.beta(2, 2, n_rows)
    return (rng.random(n_rows) < positive**power).astype(np.intp), positive


def parts_of(n_rows: int, cuts: np.ndarray) -> list[np.ndarray]:
    return np.split(np.arange(n_rows), np.sort(cuts))


@settings(max_examples=50, deadline=None)
@given(n_rows=st.integers(1, 300), n_bins=st.integers(1, 25), n_cuts=st.integers(0, 12),
       rounded=st.booleans(), power=st.sampled_from([1 / 1.3, 1.0, 1.3]),
       seed=st.integers(0, 2**32 - 1))
def test_merged_summaries_give_the_positive_view_of_all_rows(
        n_rows: int, n_bins: int, n_cuts: int, rounded: bool, power: float, seed: int) -> None:
    labels, positive = planted(n_rows, power, seed)
    if rounded:  # scores on the bin edges, many rows at one score
        positive = np.round(positive, 1)
    cuts = np.random.default_rng(seed).integers(0, n_rows + 1, size=n_cuts)  # empty parts too
    parts = parts_of(n_rows, cuts)
    summary = merge_all(BinnedSummary.of(labels[rows], positive[rows], n_bins=n_bins)
                        for rows in parts)
    scores = merge_all_scores([ScoreSummary.of(labels[rows], positive[rows], view="positive")
                               if rows.size else ScoreSummary.empty("positive")
                               for rows in parts])
    got = {**summary.measures("positive"), **scores.measures()}
    expected = global_measures(labels, positive, view="positive", n_bins=n_bins,
                               n_bootstrap=0, measures=list(EXACT))
    for key in EXACT:
        assert got[key] == pytest.approx(expected[key].value, rel=1e-9, abs=1e-12), key
    # Guo et al.'s loop on P(class 1) and 1[y = 1], written out: no calibcore code
    hand = brute_force_ece(positive, labels.astype(float), n_bins)
    assert got["ece"] == pytest.approx(hand, rel=1e-9, abs=1e-12)
    assert got["mce"] == pytest.approx(brute_force_ece(positive, labels.astype(float), n_bins,
                                                       maximum=True), rel=1e-9, abs=1e-12)
    (diagram,) = summary.diagrams(view="positive")
    (reference,) = binned_reliability(labels, positive, n_bins=n_bins, view="positive")
    assert diagram.label == reference.label == "class 1"
    np.testing.assert_array_equal(diagram.count, reference.count)
    for part in ("edges", "mean_score", "observed", "observed_low", "observed_high"):
        np.testing.assert_allclose(getattr(diagram, part), getattr(reference, part),
                                   rtol=1e-9, atol=1e-12, equal_nan=True)
    test = scores.calibration_test(n_resamples=19, random_state=seed % 1000)
    memory = consistency_resampling_test(labels, positive, view="positive", n_resamples=19,
                                         random_state=seed % 1000)
    assert (test.p_value, test.n, test.n_groups, test.view) == (
        memory.p_value, memory.n, memory.n_groups, "positive")
    assert test.statistic == pytest.approx(memory.statistic, rel=1e-9, abs=1e-15)


def merge_all_scores(summaries: list[ScoreSummary]) -> ScoreSummary:
    merged = summaries[0]
    for summary in summaries[1:]:
        merged = merged.merge(summary)
    return merged


@pytest.mark.parametrize("rounded", [False, True])
def test_above_the_sorting_limit_the_test_pools_the_same_cells(rounded: bool) -> None:
    """Above 8,192 rows the in-memory test pools rows into cells of the score (continuous
    scores) or keeps them exact (few distinct ones); the merged summaries of three parts
    make the same groups: the same resamples, statistic and p-value, and with the
    top-label check the same verdicts and words."""
    labels, positive = planted(12_000, 1.3, seed=21)
    if rounded:
        positive = np.round(positive, 3)
    parts = parts_of(labels.size, np.array([0, 5_000, 5_000, 9_000]))
    scores = {view: merge_all_scores([ScoreSummary.of(labels[rows], positive[rows],
                                                      view=view) if rows.size
                                      else ScoreSummary.empty(view) for rows in parts])
              for view in ("positive", "top_label")}
    got = calibration_tests_of_scores(scores, 2, n_resamples=50, random_state=4)
    expected = calibration_tests_by_view(labels, positive, n_resamples=50, random_state=4)
    assert not isinstance(got, str)
    for mine, theirs in ((got.headline, expected.headline),
                         (got.others[0], expected.others[0])):
        assert (mine.view, mine.p_value, mine.pooled, mine.n_groups, mine.resampling) == (
            theirs.view, theirs.p_value, theirs.pooled, theirs.n_groups, theirs.resampling)
        assert mine.statistic == pytest.approx(theirs.statistic, rel=1e-9)
    assert got.headline.pooled is not rounded
    assert got.disagreement == expected.disagreement and got.rejected


def test_three_classes_are_tested_in_the_top_label_view_and_say_the_check_was_not_run(
        ) -> None:
    rng = np.random.default_rng(5)
    proba = rng.dirichlet(np.ones(3), size=2_000)
    labels = (rng.random(2_000)[:, None] > np.cumsum(proba, axis=1)).sum(axis=1)
    scores = {"top_label": ScoreSummary.of(labels, proba)}
    got = calibration_tests_of_scores(scores, 3, n_resamples=30)
    assert not isinstance(got, str)
    expected = calibration_tests_by_view(labels, proba, n_resamples=30)
    assert got.headline.p_value == expected.headline.p_value and got.others == ()
    assert got.note is not None and "classwise check not run" in got.note
    assert calibration_tests_of_scores({"top_label": None}, 3).startswith(
        "no calibration test")


def frame_of(labels: np.ndarray, positive: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"y": np.where(labels == 1, "yes", "no"), "p_yes": positive})


def partitioned(frame: pd.DataFrame, cuts: list[int]) -> dd.DataFrame:
    """``frame`` cut at ``cuts`` into partitions, empty ones included."""
    pieces = [frame.iloc[rows] for rows in parts_of(len(frame), np.array(cuts))]
    return dd.from_delayed([dask.delayed(piece) for piece in pieces], meta=frame.iloc[:0],
                           verify_meta=False)


@pytest.mark.slow
@pytest.mark.parametrize("cuts", [[], [15_000], [0, 0, 7_000, 7_000, 29_999]],
                         ids=["one", "two", "six-with-empty"])
def test_partitioned_positive_measures_and_intervals_equal_the_in_memory_ones(cuts) -> None:
    """30,000 rows: the in-memory bootstrap resamples cells, which the partitions' merged
    cells are, with the same seed; every value and interval of the positive view agrees
    to 1e-9 (on dask's synchronous scheduler)."""
    labels, positive = planted(30_000, 1.3, seed=8)
    frame = partitioned(frame_of(labels, positive), cuts)
    assert frame.npartitions == len(cuts) + 1
    with dask.config.set(scheduler="sync"):
        result = partitioned_measures(frame, "y", ["p_yes"], ["no", "yes"], view="positive",
                                      n_bootstrap=40, random_state=3)
        equal_mass = partitioned_equal_mass(frame, "y", ["p_yes"], ["no", "yes"])
    expected = global_measures(labels, positive, view="positive", measures=list(EXACT),
                               n_bootstrap=40, random_state=3, interval="hybrid")
    assert result.view == "positive" and result.resampling == expected.resampling
    assert {m.key for m in result.measures} == set(EXACT)
    for key in EXACT:
        for part in ("plug_in", "value", "low", "high"):
            assert getattr(result[key], part) == pytest.approx(
                getattr(expected[key], part), rel=1e-9, abs=1e-12), (key, part)
    for key in ("ece", "mce"):
        assert equal_mass["views"]["positive"][key] == pytest.approx(getattr(
            metrics, {"ece": "expected_calibration_error",
                      "mce": "maximum_calibration_error"}[key])(
            labels, positive, binning="equal_mass", view="positive"), rel=1e-9)
    # the planted miscalibration: the positive view sees it, the folded top-label one hides it
    assert result["ece"].plug_in > 0.05
    assert equal_mass["views"]["top_label"]["ece"] < 0.03


def test_positive_smooth_diagram_of_the_cells_is_within_its_bound() -> None:
    labels, positive = planted(30_000, 1 / 1.3, seed=9)
    cells = CellSummary.of(labels[:10_000], positive[:10_000]).merge(
        CellSummary.of(labels[10_000:], positive[10_000:]))
    got = cells.smooth_diagram(view="positive", n_bootstrap=20)
    (expected,) = smooth_reliability(labels, positive, view="positive", n_bootstrap=0)
    assert got.label == expected.label == "class 1" and got.n == 30_000
    assert got.bandwidth == expected.bandwidth
    assert np.abs(got.curve - expected.curve).max() < CELL_ERROR_BOUND
    assert abs(got.smooth_ece - expected.smooth_ece) < CELL_ERROR_BOUND


def test_views_the_summaries_do_not_serve_are_refused() -> None:
    rng = np.random.default_rng(2)
    proba = rng.dirichlet(np.ones(3), size=50)
    labels = rng.integers(0, 3, size=50)
    with pytest.raises(CalibrationInputError, match="needs a binary problem"):
        BinnedSummary.of(labels, proba).measures("positive")
    with pytest.raises(CalibrationInputError, match="needs a binary problem"):
        ScoreSummary.of(labels, proba, view="positive")
    with pytest.raises(CalibrationInputError, match="not 'classwise'"):
        BinnedSummary.of(labels, proba).diagrams(view="classwise")  # type: ignore[arg-type]
    binary, positive = planted(100, 1.3, seed=1)
    with pytest.raises(CalibrationInputError, match="cannot merge"):
        ScoreSummary.of(binary, positive).merge(ScoreSummary.of(binary, positive,
                                                                view="positive"))
    with pytest.raises(CalibrationInputError, match="not of the positive view"):
        measures_with_intervals(BinnedSummary.of(binary, positive), None,
                                ScoreSummary.of(binary, positive), view="positive")
