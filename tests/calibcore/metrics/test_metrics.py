"""Golden values of the binned measures against brute-force references written here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from calibcore import metrics
from calibcore.exceptions import CalibrationInputError


def brute_force_ece(confidence, correct, n_bins=15, maximum=False):  # type: ignore[no-untyped-def]
    """Guo et al.'s loop: bins (lo, hi], the first also holding 0."""
    edges = np.linspace(0, 1, n_bins + 1)
    gaps, weights = [], []
    for b in range(n_bins):
        lo, hi = edges[b], edges[b + 1]
        inside = [(lo < c <= hi) or (b == 0 and c == 0) for c in confidence]
        inside = np.array(inside)
        if inside.sum():
            gaps.append(abs(np.mean(confidence[inside]) - np.mean(correct[inside])))
            weights.append(inside.sum() / len(confidence))
    return max(gaps) if maximum else float(np.dot(weights, gaps))


def top_label(y, proba):  # type: ignore[no-untyped-def]
    predicted = proba.argmax(axis=1)
    return proba.max(axis=1), (predicted == y).astype(float)


def random_problem(rng, n=500, k=4):  # type: ignore[no-untyped-def]
    proba = rng.dirichlet(np.ones(k) * 0.7, size=n)
    labels = np.array([rng.choice(k, p=p) for p in proba ** 1.5 / (proba ** 1.5).sum(1,
                                                                   keepdims=True)])
    return labels, proba


def test_ece_and_mce_match_brute_force(rng) -> None:
    labels, proba = random_problem(rng)
    conf, correct = top_label(labels, proba)
    assert metrics.expected_calibration_error(labels, proba) == pytest.approx(
        brute_force_ece(conf, correct), abs=1e-12)
    assert metrics.maximum_calibration_error(labels, proba) == pytest.approx(
        brute_force_ece(conf, correct, maximum=True), abs=1e-12)


def test_ece_on_the_example_file_matches_brute_force(shared_data) -> None:
    frame = pd.read_csv(shared_data / "default_nb.csv")
    positive = frame["y_prob"].to_numpy()
    labels = frame["y_true"].to_numpy()
    proba = np.column_stack([1 - positive, positive])
    conf, correct = top_label(labels, proba)
    assert metrics.expected_calibration_error(labels, positive) == pytest.approx(
        brute_force_ece(conf, correct), abs=1e-12)


def test_positive_and_classwise_views(rng) -> None:
    labels, proba = random_problem(rng, k=2)
    positive = proba[:, 1]
    expected = brute_force_ece(positive, (labels == 1).astype(float))
    assert metrics.expected_calibration_error(labels, positive, view="positive") == \
        pytest.approx(expected, abs=1e-12)
    labels3, proba3 = random_problem(rng, k=3)
    per_class = [brute_force_ece(proba3[:, k], (labels3 == k).astype(float)) for k in range(3)]
    assert metrics.classwise_expected_calibration_error(labels3, proba3) == pytest.approx(
        np.mean(per_class), abs=1e-12)


def test_equal_mass_bins_hold_equal_counts(rng) -> None:
    labels, proba = random_problem(rng, n=600)
    conf, correct = top_label(labels, proba)
    order = np.argsort(conf)
    groups = np.array_split(order, 10)
    expected = sum(len(g) / 600 * abs(conf[g].mean() - correct[g].mean()) for g in groups)
    value = metrics.expected_calibration_error(labels, proba, n_bins=10, binning="equal_mass")
    assert value == pytest.approx(expected, abs=1e-12)


def test_brier_nll_accuracy_match_definitions(rng) -> None:
    labels, proba = random_problem(rng)
    onehot = np.eye(proba.shape[1])[labels]
    assert metrics.brier_score(labels, proba) == pytest.approx(
        np.mean(np.sum((proba - onehot) ** 2, axis=1)), abs=1e-12)
    assert metrics.negative_log_likelihood(labels, proba) == pytest.approx(
        -np.mean(np.log(np.maximum(proba[np.arange(len(labels)), labels], 1e-12))), abs=1e-12)
    assert metrics.accuracy(labels, proba) == pytest.approx(np.mean(proba.argmax(1) == labels))


def test_binary_brier_is_half_the_summed_brier(rng) -> None:
    labels, proba = random_problem(rng, k=2)
    assert metrics.brier_score(labels, proba[:, 1]) == pytest.approx(
        2 * metrics.binary_brier_score(labels, proba[:, 1]), abs=1e-12)


def test_nll_clips_zero_probabilities() -> None:
    value = metrics.negative_log_likelihood(np.array([0]), np.array([[0.0, 1.0]]))
    assert value == pytest.approx(-np.log(1e-12))


@pytest.mark.parametrize("bad, message", [
    (np.array([[0.5, 0.6]]), "sum to 1"),
    (np.array([[1.2, -0.2]]), "outside"),
    (np.array([[np.nan, 1.0]]), "non-finite"),
])
def test_bad_probabilities_are_rejected_with_rows(bad, message) -> None:
    with pytest.raises(CalibrationInputError, match=message) as info:
        metrics.expected_calibration_error(np.array([0]), bad)
    assert info.value.rows == [0]


def test_labels_out_of_range_are_rejected() -> None:
    with pytest.raises(CalibrationInputError, match="class indices"):
        metrics.accuracy(np.array([0, 3]), np.array([[0.5, 0.5], [0.2, 0.8]]))


def test_unknown_view_and_binning_are_rejected(rng) -> None:
    labels, proba = random_problem(rng, n=20)
    with pytest.raises(CalibrationInputError, match="view"):
        metrics.expected_calibration_error(labels, proba, view="sideways")  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="binning"):
        metrics.expected_calibration_error(labels, proba, binning="log")  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="binary"):
        metrics.expected_calibration_error(labels, proba, view="positive")


probabilities = arrays(np.float64, st.integers(1, 60), elements=st.floats(0, 1))


@settings(max_examples=60, deadline=None)
@given(positive=probabilities, seed=st.integers(0, 2**16))
def test_ece_properties(positive, seed) -> None:
    labels = np.random.default_rng(seed).integers(0, 2, positive.size)
    ece = metrics.expected_calibration_error(labels, positive)
    mce = metrics.maximum_calibration_error(labels, positive)
    assert 0.0 <= ece <= mce + 1e-12 <= 1.0 + 1e-12
    order = np.random.default_rng(seed).permutation(positive.size)
    assert metrics.expected_calibration_error(labels[order], positive[order]) == \
        pytest.approx(ece, abs=1e-12)


def test_perfectly_calibrated_bins_have_zero_ece() -> None:
    # within each bin the mean confidence equals the accuracy exactly
    confidence = np.array([0.75] * 4 + [0.95] * 20)
    correct = np.array([1, 1, 1, 0] + [1] * 19 + [0])
    labels = np.where(correct == 1, 1, 0)
    assert metrics.expected_calibration_error(labels, confidence) == pytest.approx(0, abs=1e-12)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**31), n_rows=st.integers(1, 400), n_classes=st.integers(2, 4),
       binning=st.sampled_from(["equal_width", "equal_mass"]),
       view=st.sampled_from(["top_label", "classwise"]), rounded=st.booleans())
def test_ece_by_bin_count_equals_ece_for_each_count(
        seed, n_rows, n_classes, binning, view, rounded) -> None:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(n_classes), size=n_rows)
    if rounded:  # scores on bin edges, as decision trees give
        proba = np.round(proba, 1)
        proba[:, -1] = 1.0 - proba[:, :-1].sum(axis=1)
        proba = np.clip(proba, 0.0, 1.0)
        proba /= proba.sum(axis=1, keepdims=True)
    labels = rng.integers(0, n_classes, n_rows)
    counts = [1, 2, 5, 10, 15, 20, 100]
    expected = [metrics.expected_calibration_error(labels, proba, n_bins=count,
                                                   binning=binning, view=view)
                for count in counts]
    np.testing.assert_allclose(
        metrics.ece_by_bin_count(labels, proba, counts, binning=binning, view=view),
        expected, rtol=0, atol=1e-12)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**31), n_rows=st.integers(1, 400), n_classes=st.integers(2, 4),
       view=st.sampled_from(["top_label", "classwise"]), weighted=st.booleans())
def test_ece_by_bin_count_per_binning_equals_ece_of_each_binning_and_count(
        seed, n_rows, n_classes, view, weighted) -> None:
    """Both binnings from one sort: each curve is the ECE of each bin count in that
    binning (the independent one-bin-count function), weighted rows included."""
    rng = np.random.default_rng(seed)
    proba = np.round(rng.dirichlet(np.ones(n_classes), size=n_rows), 2)
    proba /= proba.sum(axis=1, keepdims=True)  # rounded: many ties and scores on edges
    labels = rng.integers(0, n_classes, n_rows)
    weights = rng.integers(1, 4, n_rows).astype(float) if weighted else None
    counts = [1, 3, 10, 15, 40]
    curves = metrics.ece_by_bin_count_per_binning(labels, proba, counts, view=view,
                                                  sample_weight=weights)
    assert list(curves) == ["equal_width", "equal_mass"]
    for binning, curve in curves.items():
        expected = [metrics.expected_calibration_error(labels, proba, n_bins=count,
                                                       binning=binning, view=view,
                                                       sample_weight=weights)
                    for count in counts]
        np.testing.assert_allclose(curve, expected, rtol=0, atol=1e-12)
        # the one-binning function gives the same numbers to the last digit
        assert curve.tolist() == metrics.ece_by_bin_count(
            labels, proba, counts, binning=binning, view=view,
            sample_weight=weights).tolist()


def test_ece_by_bin_count_per_binning_rejects_an_unknown_binning() -> None:
    with pytest.raises(CalibrationInputError, match="binning"):
        metrics.ece_by_bin_count_per_binning([0, 1], [0.2, 0.7], [5],
                                             binnings=("equal_width", "quantile"))


@settings(max_examples=300, deadline=None)
@given(n_bins=st.integers(1, 300), low=st.sampled_from([0.0, -1.0, 0.25]),
       span=st.sampled_from([1.0, 0.5, 3.0]), seed=st.integers(0, 2**32 - 1))
def test_equal_width_bins_by_arithmetic_equal_searchsorted(
        n_bins: int, low: float, span: float, seed: int) -> None:
    """Above 4,096 scores, equal-width bins are found by division and corrected near the
    edges: the same bins as ``searchsorted`` on the edges, scores on and one ulp either
    side of every edge, outside the range, infinite and NaN included."""
    from calibcore.metrics import assign_bins

    edges = np.linspace(low, low + span, n_bins + 1)
    rng = np.random.default_rng(seed)
    scores = np.concatenate([
        rng.uniform(low - 0.1, low + span + 0.1, size=4_096), edges,
        np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf),
        np.round(rng.uniform(low, low + span, size=500), 2), [np.nan, np.inf, -np.inf]])
    expected = np.clip(np.searchsorted(edges, scores, side="left") - 1, 0, n_bins - 1)
    np.testing.assert_array_equal(assign_bins(scores, edges), expected)


@settings(max_examples=200, deadline=None)
@given(n_bins=st.integers(1, 40), tied=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_uneven_bins_by_counting_equal_searchsorted(n_bins: int, tied: int,
                                                    seed: int) -> None:
    """Above 4,096 scores and up to 32 bins, sorted edges (equal-mass ones, with repeated
    edges where scores tie, and even ones) are counted below each score: the same bins
    as ``searchsorted``, scores on and one ulp either side of every edge, outside the
    range, infinite and NaN included; unsorted edges keep ``searchsorted``'s answer.
    ``bin_sums`` adds each bin's rows in one pass, as ``np.bincount`` of those bins."""
    from calibcore.metrics import assign_bins, bin_sums

    rng = np.random.default_rng(seed)
    values = np.round(rng.beta(0.5, 2.0, size=6_000), 1 + tied)
    edges = np.quantile(values, np.linspace(0.0, 1.0, n_bins + 1))
    scores = np.concatenate([
        values, rng.uniform(-0.1, 1.1, size=500), edges, np.nextafter(edges, np.inf),
        np.nextafter(edges, -np.inf), [np.nan, np.inf, -np.inf, -0.0]])
    outcomes = (rng.uniform(size=scores.size) < 0.3).astype(np.int64)
    weights = rng.exponential(size=scores.size)
    for cut in (edges, rng.permutation(edges), np.linspace(0.0, 1.0, n_bins + 1),
                np.linspace(-0.3, 0.7, n_bins + 1)):
        expected = np.clip(np.searchsorted(cut, scores, side="left") - 1, 0, n_bins - 1)
        np.testing.assert_array_equal(assign_bins(scores, cut), expected)
        # the sums of each bin in one pass: np.bincount's, to the bit (NaN where it is)
        for weight in (None, weights):
            mass = np.ones(scores.size) if weight is None else weight
            by_bincount = np.stack([
                np.bincount(expected, weights=None if weight is None else weight,
                            minlength=n_bins).astype(np.float64),
                np.bincount(expected, weights=scores * mass if weight is not None
                            else scores, minlength=n_bins),
                np.bincount(expected, weights=outcomes * mass if weight is not None
                            else outcomes, minlength=n_bins)])
            np.testing.assert_array_equal(bin_sums(scores, outcomes, cut, weight),
                                          by_bincount)


def test_counted_bins_take_what_searchsorted_takes() -> None:
    """The compiled bins keep the general path's reach: 2-D and float32 scores, strided
    columns and a Series are placed as ``searchsorted`` places them, and ``bin_sums``
    refuses outcomes or weights of another length instead of reading past them."""
    from calibcore.metrics import assign_bins, bin_sums

    rng = np.random.default_rng(4)
    edges = np.array([0.0, 0.1, 0.35, 0.8, 1.0])
    table = rng.uniform(size=(100, 50))
    for scores in (table, table.astype(np.float32), table[:, 7], pd.Series(table[:, 3]),
                   np.tile(table[:, 1], 50)):
        expected = np.clip(np.searchsorted(edges, scores, side="left") - 1, 0, 3)
        np.testing.assert_array_equal(assign_bins(scores, edges), expected)
    whole = np.arange(5_000) % 11  # integer scores on integer, evenly spaced edges
    steps = np.arange(11)
    np.testing.assert_array_equal(assign_bins(whole, steps), np.clip(
        np.searchsorted(steps, whole, side="left") - 1, 0, 9))
    scores = rng.uniform(size=5_000)
    with pytest.raises(ValueError, match="same shape"):
        bin_sums(scores, np.ones(10), edges)
    with pytest.raises(ValueError, match="same shape"):
        bin_sums(scores, np.ones(5_000), edges, np.ones(3))


def test_top_class_of_two_columns_is_argmax_and_max() -> None:
    """The two-class shortcut picks the first of tied classes, as argmax does."""
    from calibcore.data import top_class

    rng = np.random.default_rng(2)
    positive = np.concatenate([rng.uniform(size=1000), [0.5, 0.5, 0.0, 1.0]])
    for proba in (np.column_stack([1 - positive, positive]), rng.dirichlet([1, 1, 1], 500)):
        predicted, confidence = top_class(proba)
        np.testing.assert_array_equal(predicted, proba.argmax(axis=1))
        np.testing.assert_array_equal(confidence, proba.max(axis=1))
