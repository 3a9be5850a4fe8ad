"""KS calibration error and Kuiper statistic of the cumulative curve
(calibcore.metrics.cumulative), and their tests of calibration by consistency
resampling: values against a plain loop written here, properties, the p-value against a
resampling loop written here, size on calibrated data and power against y ~ Bernoulli(p^1.3)
in the positive and the top-label view."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.metrics import (
    calibration_and_cumulative_tests,
    calibration_tests_by_view,
    consistency_resampling_test,
    cumulative_tests_by_view,
    ks_calibration_error,
    kuiper_calibration_error,
)


def loop_curve(scores: list[float], outcomes: list[float],
               weights: list[float] | None = None) -> list[float]:
    """Gupta et al. 2021: sort by score, h_i = sum_{j <= i} w_j (o_j - v_j) / sum w, read
    at the last row of each run of equal scores (with distinct scores: every row)."""
    weights = weights or [1.0] * len(scores)
    rows = sorted(zip(scores, outcomes, weights, strict=True), key=lambda row: row[0])
    total = sum(weights)
    curve, running = [], 0.0
    for i, (v, o, w) in enumerate(rows):
        running += w * (o - v)
        if i == len(rows) - 1 or rows[i + 1][0] != v:
            curve.append(running / total)
    return curve


def loop_ks(scores: list[float], outcomes: list[float],
            weights: list[float] | None = None) -> float:
    return max(abs(h) for h in loop_curve(scores, outcomes, weights))


def loop_kuiper(scores: list[float], outcomes: list[float],
                weights: list[float] | None = None) -> float:
    curve = loop_curve(scores, outcomes, weights)
    return max(0.0, max(curve)) + max(0.0, -min(curve))


def top_label(y: np.ndarray, proba: np.ndarray) -> tuple[list[float], list[float]]:
    """Confidence and correctness row by row (ties to the first class, as argmax)."""
    confidence, correct = [], []
    for label, row in zip(y, proba, strict=True):
        best = max(range(len(row)), key=lambda k: (row[k], -k))
        confidence.append(float(row[best]))
        correct.append(1.0 if best == label else 0.0)
    return confidence, correct


def planted(exponent: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """p ~ Beta(2, 2), y ~ Bernoulli(p^exponent): P(class 1) runs high for exponent > 1."""
    p = rng.beta(2, 2, n)
    return (rng.uniform(size=n) < p**exponent).astype(int), p


def planted_top_label(exponent: float, n: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two classes whose confidence c = max(p, 1 - p) is right with probability
    c^exponent: the miscalibration planted in the top-label view itself (P(class 1) ~
    Beta(2, 2) with y ~ Bernoulli(p^1.3) folds into almost nothing there: its two halves
    cancel, see calibcore.metrics.calibration_views)."""
    p = rng.beta(2, 2, n)
    predicted = (p > 0.5).astype(int)
    right = rng.uniform(size=n) < np.maximum(p, 1 - p) ** exponent
    return np.where(right, predicted, 1 - predicted), p


def three_classes(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """p ~ Dirichlet(1, 1, 1), y ~ Categorical(p): calibrated."""
    p = rng.dirichlet(np.ones(3), size=n)
    return (p.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1), p


def test_values_equal_the_plain_loop_in_both_views() -> None:
    y, p = planted(1.3, 300, np.random.default_rng(1))
    positive = p.tolist(), y.astype(float).tolist()
    confidence = top_label(y, np.column_stack([1 - p, p]))
    for (scores, outcomes), view in ((positive, "positive"), (confidence, "top_label")):
        assert ks_calibration_error(y, p, view=view) == pytest.approx(
            loop_ks(scores, outcomes), rel=1e-12)
        assert kuiper_calibration_error(y, p, view=view) == pytest.approx(
            loop_kuiper(scores, outcomes), rel=1e-12)


def test_hand_computed_values() -> None:
    # sorted: 0.2 -> 1, 0.4 -> 0, 0.6 -> 0, 0.8 -> 1; h = 0.2, 0.1, -0.05, 0
    y, p = [1, 0, 0, 1], [0.2, 0.4, 0.6, 0.8]
    assert ks_calibration_error(y, p, view="positive") == pytest.approx(0.2)
    assert kuiper_calibration_error(y, p, view="positive") == pytest.approx(0.25)


def test_weighted_values_equal_the_loop_and_the_repeated_rows() -> None:
    rng = np.random.default_rng(2)
    y, p = planted(1.3, 200, rng)
    weights = rng.integers(1, 4, size=200).astype(float)
    assert ks_calibration_error(y, p, view="positive", sample_weight=weights) == pytest.approx(
        loop_ks(p.tolist(), y.astype(float).tolist(), weights.tolist()), rel=1e-12)
    repeated = np.repeat(np.arange(200), weights.astype(int))
    assert kuiper_calibration_error(y, p, view="positive",
                                    sample_weight=weights) == pytest.approx(
        kuiper_calibration_error(y[repeated], p[repeated], view="positive"), rel=1e-12)


@settings(max_examples=60, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60))
def test_bounds_and_row_order_with_tied_scores(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 0.1, 0.3, 0.5, 0.7, 1.0], size=n)  # ties and both ends
    y = (rng.uniform(size=n) < rng.uniform(size=n)).astype(int)
    ks = ks_calibration_error(y, p, view="positive")
    kuiper = kuiper_calibration_error(y, p, view="positive")
    assert 0.0 <= ks <= kuiper <= min(2.0 * ks, 1.0) + 1e-12
    assert ks == pytest.approx(loop_ks(p.tolist(), y.astype(float).tolist()), abs=1e-12)
    order = rng.permutation(n)
    assert ks_calibration_error(y[order], p[order], view="positive") == pytest.approx(
        ks, abs=1e-12)
    assert kuiper_calibration_error(y[order], p[order], view="positive") == pytest.approx(
        kuiper, abs=1e-12)


def test_zero_when_every_outcome_is_its_score() -> None:
    assert ks_calibration_error([0, 1, 1], [0.0, 1.0, 1.0], view="positive") == 0.0
    assert kuiper_calibration_error([0, 1, 1], [0.0, 1.0, 1.0], view="positive") == 0.0


def reference_p_value(scores: list[float], outcomes: list[float], statistic: str,
                      n_resamples: int, seed: int) -> tuple[float, float]:
    """Consistency resampling written out: each distinct score (ascending) draws how many
    of its rows have outcome 1, Binomial(rows, score); the statistic is recomputed on the
    rows; p = (1 + #{T* >= T}) / (1 + B)."""
    measure = {"ks": loop_ks, "kuiper": loop_kuiper}[statistic]
    distinct = sorted(set(scores))
    counts = [scores.count(s) for s in distinct]
    observed = measure(scores, outcomes)
    rng = np.random.default_rng(seed)
    exceed = 0
    for _ in range(n_resamples):
        drawn = rng.binomial(counts, distinct)
        rows_v: list[float] = []
        rows_o: list[float] = []
        for score, count, positives in zip(distinct, counts, drawn, strict=True):
            rows_v += [score] * count
            rows_o += [1.0] * int(positives) + [0.0] * int(count - positives)
        exceed += measure(rows_v, rows_o) >= observed * (1 - 1e-9)
    return observed, (1 + exceed) / (1 + n_resamples)


@pytest.mark.parametrize("statistic", ["ks", "kuiper"])
@pytest.mark.parametrize("view", ["positive", "top_label"])
def test_p_value_equals_the_resampling_loop(statistic: str, view: str) -> None:
    y, p = planted(1.3, 120, np.random.default_rng(3))
    p = np.round(p, 1)  # repeated scores: groups of several rows
    scores, outcomes = ((p.tolist(), y.astype(float).tolist()) if view == "positive"
                        else top_label(y, np.column_stack([1 - p, p])))
    observed, p_value = reference_p_value(scores, outcomes, statistic, 60, seed=11)
    result = consistency_resampling_test(y, p, statistic=statistic, view=view,  # type: ignore[arg-type]
                                         n_resamples=60, random_state=11)
    assert result.statistic == pytest.approx(observed, rel=1e-9, abs=1e-12)
    assert result.p_value == p_value
    assert not result.pooled


def test_large_continuous_tables_read_the_curve_at_the_cells() -> None:
    """Above 8,192 rows the cells' ends are where the pooled curve is read: exact there, so
    the statistic is within one cell's movement of the curve on every row."""
    y, p = planted(1.0, 30_000, np.random.default_rng(4))
    result = consistency_resampling_test(y, p, statistic="ks", view="positive", n_resamples=20)
    assert result.pooled
    assert result.statistic <= ks_calibration_error(y, p, view="positive") + 1e-12
    assert result.statistic == pytest.approx(ks_calibration_error(y, p, view="positive"),
                                             abs=2e-3)


def test_by_view_gives_both_statistics_on_the_kce_tests_draws() -> None:
    y, p = planted(1.3, 3000, np.random.default_rng(5))
    results = cumulative_tests_by_view(y, p, n_resamples=99, random_state=4)
    assert [(r.view, r.statistic_name) for r in results] == [
        ("positive", "KS calibration error"), ("positive", "Kuiper statistic"),
        ("top_label", "KS calibration error"), ("top_label", "Kuiper statistic")]
    assert results[0] == consistency_resampling_test(y, p, statistic="ks", view="positive",
                                                     n_resamples=99, random_state=4)
    assert results[3] == consistency_resampling_test(y, p, statistic="kuiper",
                                                     view="top_label", n_resamples=99,
                                                     random_state=5)
    y3, p3 = three_classes(400, np.random.default_rng(6))
    assert [r.view for r in cumulative_tests_by_view(y3, p3, n_resamples=9)] == [
        "top_label", "top_label"]


@pytest.mark.parametrize("case", ["binary", "binary_weighted", "three_classes"])
def test_one_draw_per_view_gives_what_each_function_gives_alone(case: str) -> None:
    # the overview's test: kCE, KS and Kuiper on one set of draws per view; every result
    # must be the one the separate functions (each drawing its own) give, field by field
    rng = np.random.default_rng(8)
    if case == "three_classes":
        y, p = three_classes(600, rng)
    else:
        y, p = planted(1.3, 9000, rng)  # above 8,192 rows: the pooled cells
    weights = rng.choice([1.0, 3.0], size=y.size) if case == "binary_weighted" else None
    viewed, cumulative = calibration_and_cumulative_tests(
        y, p, n_resamples=49, random_state=3, sample_weight=weights)
    assert viewed == calibration_tests_by_view(y, p, n_resamples=49, random_state=3,
                                               sample_weight=weights)
    assert cumulative == cumulative_tests_by_view(y, p, n_resamples=49, random_state=3,
                                                  sample_weight=weights)
    assert len(cumulative) == (2 if case == "three_classes" else 4)
    alone, none = calibration_and_cumulative_tests(y, p, n_resamples=49, random_state=3,
                                                   sample_weight=weights, cumulative=False)
    assert alone == viewed and none == ()


def rejection_rates(exponent: float, view: str, *, replications: int, n: int,
                    n_resamples: int, seed: int) -> dict[str, float]:
    """Share of replications of ``n`` planted rows (outcome ~ Bernoulli(score^exponent) in
    ``view``) on which each statistic's test rejects at 5%."""
    rng = np.random.default_rng(seed)
    rejections = {"ks": 0, "kuiper": 0}
    generate = planted if view == "positive" else planted_top_label
    for replication in range(replications):
        y, p = generate(exponent, n, rng)
        for statistic in rejections:
            result = consistency_resampling_test(
                y, p, statistic=statistic, view=view,  # type: ignore[arg-type]
                n_resamples=n_resamples, random_state=np.random.default_rng([seed, replication]))
            rejections[statistic] += result.rejects(0.05)
    return {statistic: count / replications for statistic, count in rejections.items()}


@pytest.mark.slow
@pytest.mark.parametrize("view", ["positive", "top_label"])
def test_size_on_calibrated_data_is_five_percent(view: str) -> None:
    # 199 resamples: a valid test rejects with probability 10/200; 400 replications put
    # the rate within +/-2.2 points of 5% with probability about 0.95
    rates = rejection_rates(1.0, view, replications=400, n=500, n_resamples=199, seed=2026)
    assert all(0.028 <= rate <= 0.072 for rate in rates.values()), rates


@pytest.mark.parametrize("view", ["positive", "top_label"])
def test_power_against_a_planted_miscalibration(view: str) -> None:
    # measured: every one of the 20 replications rejected, with either statistic, in
    # either view
    rates = rejection_rates(1.3, view, replications=20, n=1500, n_resamples=49, seed=8)
    assert all(rate >= 0.9 for rate in rates.values()), rates


@pytest.mark.parametrize("threshold", [0, 10**9])
def test_views_side_by_side_give_each_views_test_alone(
        threshold: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # large tables test the second view on a thread of its own; either way each view's
    # results are the single-view test's on that view's seed (positive: 3, top label: 4)
    import calibcore.metrics.calibration_views as views

    monkeypatch.setattr(views, "PARALLEL_VIEWS_MIN_ROWS", threshold)
    y, p = planted(1.3, 9000, np.random.default_rng(12))
    viewed, cumulative = calibration_and_cumulative_tests(y, p, n_resamples=49,
                                                          random_state=3)
    alone = {(view, statistic): consistency_resampling_test(
        y, p, statistic=statistic, view=view, n_resamples=49, random_state=seed)
        for view, seed in (("positive", 3), ("top_label", 4))
        for statistic in ("kce", "ks", "kuiper")}
    assert viewed.headline == alone["positive", "kce"]
    assert viewed.others == (alone["top_label", "kce"],)
    assert cumulative == (alone["positive", "ks"], alone["positive", "kuiper"],
                          alone["top_label", "ks"], alone["top_label", "kuiper"])
