"""Tests of LECE / LECD / Composed (Valk & Kull 2023) against brute-force references."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.model_selection import KFold

from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import negative_log_likelihood
from calibcore.recalibration._base import REGISTRY, Recalibrator
from calibcore.recalibration.lece import (
    KL_CLIP,
    LECD,
    LECE,
    NEIGHBORHOOD_SIZE_GRID,
    THRESHOLD_GRID,
    Composed,
    apply_threshold,
    cross_validated_log_loss,
    kl_divergence_matrix,
    neighbour_count,
)
from calibcore.recalibration.scaling import TemperatureScaling

# ---------------------------------------------------------------- references


def brute_force_kl(p: NDArray[np.float64], q: NDArray[np.float64]) -> float:
    """KL(p || q) with the authors' clipping at 1e-30, term by term."""
    total = 0.0
    for p_j, q_j in zip(p, q, strict=True):
        p_c, q_c = max(p_j, 1e-30), max(q_j, 1e-30)
        total += p_c * np.log(p_c / q_c)
    return total


def brute_force_predict(
    p_cal: NDArray[np.float64],
    y_cal: NDArray[np.intp],
    p_test: NDArray[np.float64],
    *,
    k: int,
    threshold: float,
    lece: bool = True,
) -> NDArray[np.float64]:
    """Valk & Kull 2023, Algorithm 1, one test row and one class at a time.

    Distances are the direct sum of p log(p / p') over a broadcast (n_test,
    n_cal, K) array, not the matrix product the implementation uses.
    """
    n_classes = p_cal.shape[1]
    test_c, cal_c = np.clip(p_test, 1e-30, 1.0), np.clip(p_cal, 1e-30, 1.0)
    all_distances = np.sum(test_c[:, None] * np.log(test_c[:, None] / cal_c), axis=2)
    out = np.empty_like(p_test)
    for row, (p, distances) in enumerate(zip(p_test, all_distances, strict=True)):
        nearest = np.argsort(distances, kind="stable")[:k]
        mean_p = p_cal[nearest].mean(axis=0)
        mean_y = np.eye(n_classes)[y_cal[nearest]].mean(axis=0)
        calibrated = p - (mean_p - mean_y) if lece else mean_y.copy()
        for j in range(n_classes):
            if p[j] <= threshold or calibrated[j] <= threshold:
                calibrated[j] = p[j]
        out[row] = calibrated / calibrated.sum()
    return out


def random_simplex(rng: np.random.Generator, n: int, n_classes: int, alpha: float = 1.0):
    return rng.dirichlet(np.full(n_classes, alpha), size=n)


def overconfident(rng: np.random.Generator, n: int, n_classes: int, sharpness: float = 2.5):
    """Labels and probabilities of an overconfident softmax classifier."""
    labels = rng.integers(0, n_classes, n)
    logits = rng.normal(0.0, 1.0, (n, n_classes))
    logits[np.arange(n), labels] += rng.normal(2.0, 1.0, n)
    scaled = sharpness * logits
    proba = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    return labels, proba / proba.sum(axis=1, keepdims=True)


# ---------------------------------------------------- the paper's synthetic task


def true_calibration(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Valk & Kull 2023, Section 4.1.1: the chosen true calibration map c(p)."""
    c = np.column_stack(
        [
            p[:, 0] ** 0.8 + p[:, 0] * p[:, 1] / 5,
            p[:, 1] + p[:, 0] * p[:, 2] / 3,
            p[:, 2] + p[:, 0] * p[:, 1] / 10,
        ]
    )
    return c / c.sum(axis=1, keepdims=True)


def synthetic_task(n: int, seed: int):
    """Dirichlet(0.5, 0.5, 0.5) predictions and labels drawn from c(p).

    The authors seed NumPy's legacy generator (fit rows: seed s, test rows:
    s + 100) and draw one label per row with ``choice``; a private
    ``RandomState`` with the same draws in one vectorized call reproduces their
    data exactly (checked in ``test_synthetic_generator_matches_reference``).
    """
    rs = np.random.RandomState(seed)
    p = rs.dirichlet([0.5, 0.5, 0.5], n)
    c = true_calibration(p)
    cdf = np.cumsum(c, axis=1)
    cdf /= cdf[:, -1:]
    labels = (rs.random_sample(n)[:, None] >= cdf).sum(axis=1)
    return p, c, labels


def confidence_and_classwise_ce(calibrated, true_c) -> tuple[float, float]:
    """CE with alpha = 1 against the known c(p), as in the authors' notebook."""
    confidence = np.mean(np.abs(calibrated.max(axis=1) - true_c.max(axis=1)))
    classwise = np.mean(np.abs(calibrated - true_c))
    return float(confidence), float(classwise)


def test_synthetic_generator_matches_reference():
    rs = np.random.RandomState(7)
    p = rs.dirichlet([0.5, 0.5, 0.5], 300)
    c = true_calibration(p)
    looped = np.array([rs.choice(np.arange(3), p=row) for row in c])
    p_vec, _, labels = synthetic_task(300, 7)
    np.testing.assert_array_equal(p_vec, p)
    np.testing.assert_array_equal(labels, looped)


def _lece_on_synthetic(seed: int, n_test: int) -> tuple[tuple[float, float], tuple[float, float]]:
    p_fit, _, y_fit = synthetic_task(5000, seed)
    p_test, c_test, _ = synthetic_task(100_000, seed + 100)
    p_test, c_test = p_test[:n_test], c_test[:n_test]
    model = LECE(neighborhood_size=0.1, threshold=0.0).fit(p_fit, y_fit)  # k = 500
    assert neighbour_count(model.neighborhood_size_, 5000) == 500
    calibrated = model.predict_proba(p_test)
    return confidence_and_classwise_ce(calibrated, c_test), confidence_and_classwise_ce(
        p_test, c_test
    )


@pytest.mark.slow
def test_synthetic_task_seed_0_first_20000_test_rows():
    (conf, classwise), (conf_uncal, classwise_uncal) = _lece_on_synthetic(0, 20_000)
    assert conf_uncal == pytest.approx(0.035, abs=0.002)
    assert classwise_uncal == pytest.approx(0.029, abs=0.002)
    assert conf == pytest.approx(0.016, abs=0.002)
    assert classwise == pytest.approx(0.014, abs=0.0015)


@pytest.mark.slow
def test_synthetic_task_seed_0_all_100000_test_rows():
    (conf, classwise), (conf_uncal, classwise_uncal) = _lece_on_synthetic(0, 100_000)
    assert conf_uncal == pytest.approx(0.0356, abs=0.0005)
    assert classwise_uncal == pytest.approx(0.0292, abs=0.0005)
    assert conf == pytest.approx(0.016, abs=0.001)
    assert classwise == pytest.approx(0.014, abs=0.001)


@pytest.mark.slow
def test_synthetic_task_mean_over_seeds_matches_paper_table_1():
    # Table 1 (100 seeds): LECE 0.018 +- 0.003 (confidence), 0.015 +- 0.002 (classwise).
    results = np.array([_lece_on_synthetic(seed, 20_000)[0] for seed in range(8)])
    assert results[:, 0].mean() == pytest.approx(0.018, abs=0.002)
    assert results[:, 1].mean() == pytest.approx(0.015, abs=0.0015)


# ------------------------------------------------------------- neighbours


def test_kl_divergence_matrix_matches_term_by_term_sum():
    rng = np.random.default_rng(0)
    query = random_simplex(rng, 6, 4, alpha=0.5)
    reference = random_simplex(rng, 9, 4, alpha=0.5)
    query[0, 1] = 0.0
    query[0] /= query[0].sum()
    reference[2, 3] = 0.0
    reference[2] /= reference[2].sum()
    expected = np.array([[brute_force_kl(p, q) for q in reference] for p in query])
    np.testing.assert_allclose(
        kl_divergence_matrix(query, reference), expected, rtol=1e-10, atol=1e-10
    )


@pytest.mark.parametrize("lece", [True, False])
@pytest.mark.parametrize(
    ("q", "t"), [(0.01, 0.0), (0.05, 0.0), (0.1, 0.02), (0.3, 0.1), (1.0, 0.0), (0.2, 1.0)]
)
def test_predictions_match_brute_force_algorithm_1(lece, q, t):
    rng = np.random.default_rng(1)
    y_cal, p_cal = overconfident(rng, 300, 4)
    _, p_test = overconfident(rng, 40, 4)
    model = (LECE if lece else LECD)(neighborhood_size=q, threshold=t).fit(p_cal, y_cal)
    expected = brute_force_predict(
        p_cal, y_cal, p_test, k=neighbour_count(q, 300), threshold=t, lece=lece
    )
    np.testing.assert_allclose(model.predict_proba(p_test), expected, atol=1e-12)


def test_blocks_do_not_change_predictions(monkeypatch):
    import calibcore.recalibration.lece as lece_module

    rng = np.random.default_rng(2)
    y_cal, p_cal = overconfident(rng, 500, 5)
    _, p_test = overconfident(rng, 300, 5)
    model = LECE(neighborhood_size=0.05, threshold=0.01).fit(p_cal, y_cal)
    whole = model.predict_proba(p_test)
    monkeypatch.setattr(lece_module, "_BLOCK_ENTRIES", 7 * 500)  # blocks of 7 rows
    np.testing.assert_array_equal(model.predict_proba(p_test), whole)


def test_neighbour_count_is_int_of_q_times_n_with_floor_one():
    assert neighbour_count(0.01, 5000) == 50
    assert neighbour_count(0.01, 4500) == 45
    assert neighbour_count(0.07, 4500) == int(4500 * 0.07)
    assert neighbour_count(1.0, 4500) == 4500
    assert neighbour_count(0.01, 50) == 1


def test_threshold_keeps_small_and_negative_entries_and_renormalizes():
    proba = np.array([[0.01, 0.49, 0.50]])
    calibrated = np.array([[-0.01, 0.55, 0.46]])
    # class 0 would go negative: it keeps 0.01; the row is renormalized.
    np.testing.assert_allclose(
        apply_threshold(proba, calibrated, 0.0), [[0.01 / 1.02, 0.55 / 1.02, 0.46 / 1.02]]
    )
    # p <= t (inclusive) keeps p; calibrated == t keeps p too.
    np.testing.assert_allclose(
        apply_threshold(proba, np.array([[0.3, 0.2, 0.6]]), 0.2),
        [[0.01 / 1.1, 0.49 / 1.1, 0.6 / 1.1]],
    )
    np.testing.assert_array_equal(apply_threshold(proba, calibrated, 1.0), proba)


# ----------------------------------------------------------- cross-validation


def brute_force_cv(p, y, sizes, thresholds, *, lece=True):
    losses = np.zeros((len(sizes), len(thresholds)))
    for train, test in KFold(n_splits=10, shuffle=True, random_state=0).split(p):
        for i, q in enumerate(sizes):
            for j, t in enumerate(thresholds):
                out = brute_force_predict(
                    p[train],
                    y[train],
                    p[test],
                    k=max(1, int(train.size * q)),
                    threshold=t,
                    lece=lece,
                )
                true_class = np.clip(out[np.arange(test.size), y[test]], 1e-12, 1.0)
                losses[i, j] += -np.mean(np.log(true_class)) / 10
    return losses


@pytest.mark.slow
@pytest.mark.parametrize("lece", [True, False])
def test_cv_losses_match_refitting_every_grid_point(lece):
    rng = np.random.default_rng(3)
    y, p = overconfident(rng, 400, 3)
    sizes, thresholds = (0.01, 0.02, 0.1, 0.25, 1.0), (0.0, 0.05, 1.0)
    expected = brute_force_cv(p, y, sizes, thresholds, lece=lece)
    got = cross_validated_log_loss(
        p,
        y,
        assumption="errors" if lece else "distributions",
        neighborhood_sizes=sizes,
        thresholds=thresholds,
        n_folds=10,
        random_state=0,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_default_cv_searches_the_paper_grid_and_picks_the_minimum():
    rng = np.random.default_rng(4)
    y, p = overconfident(rng, 600, 4)
    model = LECE().fit(p, y)
    assert model.cv_log_loss_.shape == (len(NEIGHBORHOOD_SIZE_GRID), len(THRESHOLD_GRID))
    best = np.unravel_index(np.argmin(model.cv_log_loss_), model.cv_log_loss_.shape)
    assert model.neighborhood_size_ == NEIGHBORHOOD_SIZE_GRID[best[0]]
    assert model.threshold_ == THRESHOLD_GRID[best[1]]
    # t = 1 is the identity map: that column is the uncalibrated held-out loss.
    np.testing.assert_allclose(model.cv_log_loss_[:, -1], negative_log_likelihood(y, p))


def test_one_fixed_parameter_searches_only_the_other():
    rng = np.random.default_rng(5)
    y, p = overconfident(rng, 300, 3)
    model = LECD(threshold=0.01).fit(p, y)
    assert model.cv_log_loss_.shape == (len(NEIGHBORHOOD_SIZE_GRID), 1)
    assert model.threshold_ == 0.01
    assert model.neighborhood_size_ in NEIGHBORHOOD_SIZE_GRID
    fixed = LECE(neighborhood_size=0.1, threshold=0.0).fit(p, y)
    assert fixed.cv_log_loss_ is None


def test_cv_is_reproducible_and_seeded():
    rng = np.random.default_rng(6)
    y, p = overconfident(rng, 300, 3)
    first = LECE(random_state=1).fit(p, y).cv_log_loss_
    np.testing.assert_array_equal(LECE(random_state=1).fit(p, y).cv_log_loss_, first)
    assert not np.array_equal(LECE(random_state=2).fit(p, y).cv_log_loss_, first)


# ------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_classes=st.integers(2, 6),
    n_cal=st.integers(2, 60),
    q=st.floats(0.001, 1.0),
    t=st.sampled_from([0.0, 0.001, 0.05, 0.3, 1.0]),
    lece=st.booleans(),
)
def test_outputs_are_on_the_simplex(seed, n_classes, n_cal, q, t, lece):
    rng = np.random.default_rng(seed)
    p_cal = random_simplex(rng, n_cal, n_classes, alpha=0.3)
    p_test = random_simplex(rng, 25, n_classes, alpha=0.3)
    p_test[rng.random(p_test.shape) < 0.1] = 0.0  # exact zeros
    p_test[p_test.sum(axis=1) == 0, 0] = 1.0
    p_test /= p_test.sum(axis=1, keepdims=True)
    y_cal = rng.integers(0, n_classes, n_cal)
    y_cal[0] = (y_cal[1] + 1) % n_classes  # two classes at least: one is refused
    out = (LECE if lece else LECD)(neighborhood_size=q, threshold=t).fit(p_cal, y_cal)
    result = out.predict_proba(p_test)
    assert result.shape == p_test.shape
    assert np.all(result >= 0.0)
    np.testing.assert_allclose(result.sum(axis=1), 1.0, atol=1e-12)
    if t == 1.0:
        np.testing.assert_allclose(result, p_test, atol=1e-15)


def test_lecd_with_all_rows_predicts_the_class_frequencies():
    rng = np.random.default_rng(8)
    y, p = overconfident(rng, 400, 3, sharpness=0.5)  # no tiny probabilities
    model = LECD(neighborhood_size=1.0, threshold=0.0).fit(p, y)
    np.testing.assert_allclose(
        model.predict_proba(p[:10]), np.tile(np.bincount(y, minlength=3) / 400, (10, 1)), atol=1e-12
    )


def test_binary_input_returns_two_columns():
    rng = np.random.default_rng(9)
    positive = rng.random(400)
    y = (rng.random(400) < positive**2).astype(int)
    out = LECE(neighborhood_size=0.1, threshold=0.0).fit(positive, y).predict_proba(positive[:5])
    assert out.shape == (5, 2)


# ------------------------------------------- binary input: neighbours in sorted order


def stable_neighbour_means(p_cal, targets, p_test, k):
    """Mean target of the k nearest rows by KL, ties by calibration row order (stable sort)."""
    distances = np.clip(p_test, 1e-30, 1.0) @ -np.log(np.clip(p_cal, 1e-30, 1.0)).T
    nearest = np.argsort(distances, axis=1, kind="stable")[:, :k]
    return targets[nearest].mean(axis=1)


def binary_rows(positive):
    return np.column_stack([1.0 - positive, positive])


@pytest.mark.parametrize("n_cal", [1, 2, 7, 300])
@pytest.mark.parametrize("q", [0.01, 0.1, 0.5, 0.99])
def test_binary_neighbourhoods_are_those_of_the_general_search(monkeypatch, n_cal, q):
    import calibcore.recalibration.lece as lece_module

    rng = np.random.default_rng(11)
    p_cal = binary_rows(rng.beta(0.5, 0.5, n_cal))
    p_test = binary_rows(np.r_[rng.beta(0.5, 0.5, 200), 0.0, 1.0, 1e-40])
    targets = np.eye(2)[rng.integers(0, 2, n_cal)] - p_cal
    counts = sorted({neighbour_count(q, n_cal), max(1, n_cal // 3), n_cal})
    sorted_means = lece_module.neighbour_means(p_test, p_cal, targets, counts)
    monkeypatch.setattr(lece_module, "on_binary_curve", lambda reference: False)
    general_means = lece_module.neighbour_means(p_test, p_cal, targets, counts)
    np.testing.assert_allclose(sorted_means, general_means, atol=1e-14)


@pytest.mark.parametrize("decimals", [1, 2])
def test_binary_ties_between_identical_rows_take_the_lowest_index_first(decimals):
    import calibcore.recalibration.lece as lece_module

    rng = np.random.default_rng(12)
    p_cal = binary_rows(np.round(rng.uniform(size=400), decimals))  # runs of identical rows
    p_cal[:40] = binary_rows(np.zeros(40))
    p_test = binary_rows(np.r_[rng.uniform(size=150), 0.0, 1.0])  # no two rows equidistant
    targets = np.eye(2)[rng.integers(0, 2, 400)] - p_cal
    for k in (1, 3, 17, 150, 399):
        np.testing.assert_allclose(
            lece_module.neighbour_means(p_test, p_cal, targets, [k])[0],
            stable_neighbour_means(p_cal, targets, p_test, k), atol=1e-14)


def numpy_searches(sorted_reference, query, count):
    """The binary searches as NumPy operations over every query row at once (the code
    before the compiled loops): the lowest rows, then the windows' starts."""
    negative_log, distinct = sorted_reference.negative_log, sorted_reference.distinct
    n_rows, rows = negative_log.shape[0], np.arange(query.shape[0])

    def distance(positions):
        return query[rows, 0] * negative_log[positions, 0] + query[rows, 1] * negative_log[
            positions, 1]

    low, high = np.zeros(rows.size, dtype=np.intp), np.full(rows.size, distinct.size - 1)
    while (open_rows := low < high).any():
        middle = (low + high) // 2
        falling = distance(distinct[middle]) > distance(distinct[np.minimum(middle + 1, high)])
        low = np.where(open_rows & falling, middle + 1, low)
        high = np.where(open_rows & ~falling, middle, high)
    lowest = distinct[low]
    low, high = np.zeros(rows.size, dtype=np.intp), np.full(rows.size, n_rows - count)
    while (open_rows := low < high).any():
        middle = (low + high) // 2
        end = middle + count
        near, far = distance(middle), distance(np.minimum(end, n_rows - 1))
        tie_near, tie_far = np.where(middle >= lowest, middle, -middle), np.where(
            end >= lowest, end, -end)
        farther = (near > far) | ((near == far) & (tie_near > tie_far))
        low = np.where(open_rows & farther, middle + 1, low)
        high = np.where(open_rows & ~farther, middle, high)
    return lowest, low


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_cal=st.integers(1, 300), decimals=st.sampled_from(
    [1, 2, 6, None]), k_share=st.floats(0.0, 1.0))
def test_compiled_binary_searches_are_the_numpy_searches(seed, n_cal, decimals, k_share):
    """Rows on the binary curve, with runs of identical rows, zeros and ones: the compiled
    searches find the same lowest rows and window starts as NumPy's, row for row."""
    from calibcore.recalibration._binary_neighbours import SortedReference

    rng = np.random.default_rng(seed)
    positive = rng.beta(0.5, 0.5, n_cal)
    if decimals is not None:
        positive = np.round(positive, decimals)
    positive[: n_cal // 10] = 0.0
    reference = binary_rows(positive)
    query = np.clip(binary_rows(np.r_[rng.uniform(size=60), 0.0, 1.0, positive[:5]]),
                    KL_CLIP, 1.0)
    targets = np.eye(2)[rng.integers(0, 2, n_cal)] - reference
    sorted_reference = SortedReference.build(reference, targets, KL_CLIP)
    count = 1 + int(k_share * (n_cal - 1))
    lowest, starts = numpy_searches(sorted_reference, query, count)
    np.testing.assert_array_equal(sorted_reference.lowest_rows(query), lowest)
    np.testing.assert_array_equal(sorted_reference._window_starts(query, count, lowest), starts)


def test_binary_fit_matches_brute_force_cross_validation():
    rng = np.random.default_rng(13)
    positive = rng.beta(2.0, 2.0, 400)
    y = (rng.random(400) < positive**1.5).astype(np.intp)
    p = binary_rows(positive)
    sizes, thresholds = (0.01, 0.1, 0.3, 1.0), (0.0, 0.05, 1.0)
    got = cross_validated_log_loss(p, y, assumption="errors", neighborhood_sizes=sizes,
                                   thresholds=thresholds, n_folds=10, random_state=0)
    np.testing.assert_allclose(got, brute_force_cv(p, y, sizes, thresholds), rtol=1e-10)


def stable_weighted_neighbour_means(p_cal, targets, weights, p_test, masses):
    """Mean w-weighted target of the nearest ``mass`` units of weight by KL: rows nearest
    first (ties by calibration row order, a stable sort), the last one in part."""
    negative_log = -np.log(np.clip(p_cal, KL_CLIP, 1.0))
    query = np.clip(p_test, KL_CLIP, 1.0)
    # CE per class, then the sum: the binary search's two roundings (no matrix product)
    distances = query[:, :1] * negative_log[:, 0] + query[:, 1:] * negative_log[:, 1]
    out = np.empty((len(masses), p_test.shape[0], targets.shape[1]))
    for row, order in enumerate(np.argsort(distances, axis=1, kind="stable")):
        before = np.cumsum(weights[order]) - weights[order]
        for which, mass in enumerate(masses):
            taken = np.clip(mass - before, 0.0, weights[order])
            out[which, row] = taken @ targets[order] / mass
    return out


@pytest.mark.parametrize("seed", range(12))
def test_binary_weighted_neighbourhoods_are_the_stable_search(seed):
    """Row weights on the binary curve: the nearest rows are still a window, and the
    fewest reaching each mass are found by a binary search over their count. Against
    the definition on every query row: runs of identical rows (taken lowest index first),
    rows at 0 and 1, integer weights with masses at the boundaries between rows."""
    import calibcore.recalibration.lece as lece_module

    rng = np.random.default_rng(seed)
    n_cal = int(rng.integers(1, 300))
    positive = np.round(rng.uniform(size=n_cal), [1, 2, 8][seed % 3])
    positive[: n_cal // 6] = 0.0 if seed % 2 else 1.0
    p_cal = binary_rows(positive)
    p_test = binary_rows(np.r_[rng.uniform(size=120), 0.0, 1.0])  # none equidistant
    targets = np.eye(2)[rng.integers(0, 2, n_cal)] - p_cal
    weights = (rng.integers(1, 4, n_cal).astype(float) if seed % 2
               else rng.uniform(0.2, 5.0, n_cal))
    total = weights.sum()
    masses = np.unique(np.r_[rng.uniform(0.0, total, 4), weights.min() / 2,
                             np.cumsum(weights)[:3]])
    masses = masses[masses < total]
    got = lece_module.weighted_neighbour_means(p_test, p_cal, targets, weights, masses)
    np.testing.assert_allclose(
        got, stable_weighted_neighbour_means(p_cal, targets, weights, p_test, masses),
        rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", [LECE, LECD])
def test_weighted_binary_fit_takes_the_sorted_search(monkeypatch, method):
    """Weighted LECE on two classes never compares every pair of rows (97 s on 30,000
    rows that way), and chooses and corrects as the pairwise search does (continuous
    probabilities: no two rows equidistant)."""
    import calibcore.recalibration._kl_neighbours as kl_module
    import calibcore.recalibration._lece_cross_validation as cv_module
    import calibcore.recalibration.lece as lece_module

    rng = np.random.default_rng(16)
    positive = rng.beta(2.0, 2.0, 2_000)
    y = (rng.random(2_000) < positive**1.4).astype(np.intp)
    weights = rng.lognormal(0.0, 0.6, 2_000).clip(0.2, 5.0).round(3)
    p = binary_rows(positive)
    with monkeypatch.context() as patched:
        patched.setattr(kl_module, "_distance_blocks",
                        lambda *args, **kwargs: pytest.fail("the general search ran"))
        fitted = method().fit(p, y, sample_weight=weights)
        got = fitted.predict_proba(p)
    monkeypatch.setattr(lece_module, "on_binary_curve", lambda reference: False)
    monkeypatch.setattr(cv_module, "on_binary_curve", lambda reference: False)
    general = method().fit(p, y, sample_weight=weights)
    assert (general.neighborhood_size_, general.threshold_) == (
        fitted.neighborhood_size_, fitted.threshold_)
    np.testing.assert_allclose(general.predict_proba(p), got, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", [LECE, LECD])
def test_two_class_rows_a_bit_off_the_curve_take_the_sorted_search(monkeypatch, method):
    """Temperature scaling's two columns sum to 1 up to a rounding, so about half its rows
    are one bit off ``(1 - b, b)``: TS+LECE's LECE sees such rows. They are read as the
    points they are, on the curve, so the sorted search runs (the distance matrix took
    13 minutes on 150,000 rows), and the result is the general search's on the rows as
    given, but for the rounding."""
    import calibcore.recalibration._kl_neighbours as kl_module
    import calibcore.recalibration._lece_cross_validation as cv_module
    import calibcore.recalibration.lece as lece_module

    rng = np.random.default_rng(15)
    positive = rng.beta(2.0, 2.0, 3_000)
    y = (rng.random(3_000) < positive**1.4).astype(np.intp)
    scaled = TemperatureScaling().fit(binary_rows(positive), y).predict_proba(
        binary_rows(positive))
    assert not np.array_equal(scaled[:, 0], 1.0 - scaled[:, 1])  # off the curve by a bit
    on_curve = binary_rows(scaled[:, 1])
    expected = method().fit(on_curve, y)
    with monkeypatch.context() as patched:  # no distance matrix anywhere
        patched.setattr(kl_module, "_distance_blocks",
                        lambda *args, **kwargs: pytest.fail("the general search ran"))
        fitted = method().fit(scaled, y)
        got = fitted.predict_proba(scaled)
    assert (fitted.neighborhood_size_, fitted.threshold_) == (
        expected.neighborhood_size_, expected.threshold_)
    np.testing.assert_array_equal(got, expected.predict_proba(on_curve))
    # the rows as given, searched by distances (the general search) as before
    monkeypatch.setattr(lece_module, "onto_binary_curve", lambda proba: proba)
    monkeypatch.setattr(lece_module, "on_binary_curve", lambda reference: False)
    monkeypatch.setattr(cv_module, "on_binary_curve", lambda reference: False)
    general = method().fit(scaled, y)
    assert (general.neighborhood_size_, general.threshold_) == (
        fitted.neighborhood_size_, fitted.threshold_)
    np.testing.assert_allclose(general.predict_proba(scaled), got, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_cross_validation_reports_moving_progress(n_classes):
    rng = np.random.default_rng(14)
    y, p = overconfident(rng, 500, n_classes)
    reports: list[tuple[float, str]] = []
    cross_validated_log_loss(p, y, assumption="errors", neighborhood_sizes=(0.1, 0.2),
                             thresholds=(0.0,), n_folds=5, random_state=0,
                             heartbeat=lambda *report: reports.append(report))
    fractions = [fraction for fraction, _ in reports]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 0.8
    assert reports[-1][1] == "cross-validating q and t: fold 5 of 5"


# ---------------------------------------------------- JSON, clone, registry


def roundtrip(model: Recalibrator) -> Recalibrator:
    return Recalibrator.from_json(json.loads(json.dumps(model.to_json())))


@pytest.mark.parametrize(
    "model",
    [
        LECE(),
        LECD(neighborhood_size=0.05, threshold=0.005),
        Composed(),
        Composed(steps=[TemperatureScaling(), LECD(neighborhood_size=0.1, threshold=0.01)]),
    ],
    ids=["lece-cv", "lecd-fixed", "ts+lece-default", "ts+lecd"],
)
def test_json_round_trip_gives_identical_predictions(model):
    rng = np.random.default_rng(10)
    y, p = overconfident(rng, 400, 4)
    _, p_new = overconfident(rng, 100, 4)
    model.fit(p, y)
    rebuilt = roundtrip(model)
    assert type(rebuilt) is type(model)
    np.testing.assert_array_equal(rebuilt.predict_proba(p_new), model.predict_proba(p_new))
    assert repr(rebuilt) == repr(model)


@pytest.mark.parametrize("spec", ["lece", {"method": "no_such_method"}, {"params": {}}])
def test_malformed_nested_step_is_an_input_error(spec):
    rng = np.random.default_rng(16)
    y, p = overconfident(rng, 100, 3)
    document = json.loads(json.dumps(Composed(steps=[TemperatureScaling()]).fit(p, y).to_json()))
    assert document["params"]["steps"][0]["__unfitted_recalibrator__"]["method"] == "temperature"
    document["params"]["steps"][0] = {"__unfitted_recalibrator__": spec}
    with pytest.raises(CalibrationInputError, match="nested recalibrator"):
        Recalibrator.from_json(document)


def test_composed_params_clone_and_fit_leave_steps_untouched():
    steps = [TemperatureScaling(), LECE(neighborhood_size=0.1, threshold=0.0)]
    model = Composed(steps=steps)
    assert model.get_params()["steps"] is steps
    assert set(model.get_params(deep=True)) == {"steps"}
    copy = clone(model)
    assert copy.steps is not steps and repr(copy.steps) == repr(steps)
    rng = np.random.default_rng(11)
    y, p = overconfident(rng, 300, 3)
    model.fit(p, y)
    assert not any(hasattr(step, "n_classes_") for step in steps)
    assert model.steps_[1].calibration_proba_.shape == (300, 3)


def test_composed_applies_steps_in_sequence():
    rng = np.random.default_rng(12)
    y, p = overconfident(rng, 400, 4)
    _, p_new = overconfident(rng, 50, 4)
    model = Composed(steps=[TemperatureScaling(), LECE(neighborhood_size=0.1, threshold=0.01)])
    model.fit(p, y)
    scaling = TemperatureScaling().fit(p, y)
    lece = LECE(neighborhood_size=0.1, threshold=0.01).fit(scaling.predict_proba(p), y)
    np.testing.assert_allclose(
        model.predict_proba(p_new), lece.predict_proba(scaling.predict_proba(p_new)), atol=1e-14
    )


class _ShiftByFeature(Recalibrator):
    """Test-only step needing features (not registered)."""

    method = "test_shift_by_feature"
    needs_features = True

    def _fit(self, proba, labels, features, heartbeat):
        self.seen_ = features.copy()

    def _predict(self, proba, features, heartbeat):
        shifted = proba.copy()
        shifted[:, 0] += features[:, 0]
        return shifted


def test_composed_forwards_features_to_steps_that_need_them():
    rng = np.random.default_rng(13)
    y, p = overconfident(rng, 50, 3)
    features = rng.random((50, 2))
    model = Composed(steps=[TemperatureScaling(), _ShiftByFeature()]).fit(p, y, features)
    np.testing.assert_array_equal(model.steps_[1].seen_, features)
    with pytest.raises(CalibrationInputError, match="needs features"):
        model.predict_proba(p)


def test_registered_under_their_method_names():
    assert REGISTRY["lece"] is LECE
    assert REGISTRY["lecd"] is LECD
    assert REGISTRY["composed"] is Composed


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (LECE(neighborhood_size=0.0, threshold=0.0), "neighborhood_size"),
        (LECE(neighborhood_size=1.5, threshold=0.0), "neighborhood_size"),
        (LECD(neighborhood_size=0.1, threshold=-0.1), "threshold"),
        (LECE(n_folds=1), "n_folds"),
        (Composed(steps=[]), "steps"),
        (Composed(steps=[TemperatureScaling(), "lece"]), "steps"),
    ],
)
def test_bad_parameters_raise_actionable_errors(model, message):
    rng = np.random.default_rng(14)
    y, p = overconfident(rng, 50, 3)
    with pytest.raises(CalibrationInputError, match=message):
        model.fit(p, y)


def test_too_few_rows_for_cross_validation():
    with pytest.raises(CalibrationInputError, match="at least 10 calibration rows"):
        LECE().fit(np.full((5, 3), 1 / 3), [0, 1, 2, 0, 1])


# -------------------------------------------------------- held-out NLL


@pytest.mark.slow
def test_lece_improves_held_out_nll_on_the_synthetic_task():
    p_fit, _, y_fit = synthetic_task(2000, 1)
    p_test, _, y_test = synthetic_task(5000, 101)
    for model in (LECE(), LECD()):
        calibrated = model.fit(p_fit, y_fit).predict_proba(p_test)
        assert negative_log_likelihood(y_test, calibrated) < (
            negative_log_likelihood(y_test, p_test) - 0.005
        )


def test_ts_plus_lece_improves_held_out_nll_with_ten_classes():
    rng = np.random.default_rng(15)
    y_fit, p_fit = overconfident(rng, 2000, 10)
    y_test, p_test = overconfident(rng, 3000, 10)
    model = Composed().fit(p_fit, y_fit)
    before = negative_log_likelihood(y_test, p_test)
    after_ts = negative_log_likelihood(y_test, model.steps_[0].predict_proba(p_test))
    after = negative_log_likelihood(y_test, model.predict_proba(p_test))
    assert after < before - 0.05
    assert after <= after_ts + 0.005  # the CV can choose t = 1 (identity) on top of TS
