"""The test of calibration by consistency resampling (calibcore.metrics.calibration_test):
golden values against a plain-loop reference written here, its size by simulation on
calibrated data, its power on the tempered family, and properties."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import relplot
from hypothesis import given, settings
from hypothesis import strategies as st

import calibcore
from calibcore import metrics
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import calibration_test, consistency_resampling_test

Generate = Callable[[float, int, np.random.Generator], tuple[np.ndarray, np.ndarray]]


def binary(temper: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Błasiok et al. 2023, §10.1: f ~ U[0, 1], y ~ Bernoulli(f), prediction
    f^t / (f^t + (1 - f)^t)."""
    f = rng.uniform(size=n)
    y = (rng.uniform(size=n) < f).astype(int)
    return y, f**temper / (f**temper + (1.0 - f) ** temper)


def three_classes(temper: float, n: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """p ~ Dirichlet(1, 1, 1), y ~ Categorical(p), prediction p^t normalised."""
    p = rng.dirichlet(np.ones(3), size=n)
    y = (p.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1)
    tempered = p**temper
    return y, tempered / tempered.sum(axis=1, keepdims=True)


def top_label(y: np.ndarray, proba: np.ndarray) -> tuple[list[float], list[float]]:
    """Confidence and correctness, row by row (ties go to the first class, as argmax)."""
    confidence, correct = [], []
    for label, row in zip(y, proba, strict=True):
        best = 0
        for k in range(1, len(row)):
            if row[k] > row[best]:
                best = k
        confidence.append(float(row[best]))
        correct.append(1.0 if best == label else 0.0)
    return confidence, correct


def loop_kce(v: list[float], o: list[float]) -> float:
    total = 0.0
    for vi, oi in zip(v, o, strict=True):
        for vj, oj in zip(v, o, strict=True):
            total += (vi - oi) * (vj - oj) * np.exp(-abs(vi - vj))
    return float(np.sqrt(max(total, 0.0))) / len(v)


def relplot_smooth_ece(v: list[float], o: list[float]) -> float:
    return float(relplot.smECE(np.array(v), np.array(o)))


def reference_test(y: np.ndarray, proba: np.ndarray, statistic: Callable[..., float],
                   n_resamples: int, seed: int) -> tuple[float, float, list[float]]:
    """Consistency resampling written out: for each resample, each distinct confidence
    (ascending) draws how many of its rows are correct, Binomial(rows, confidence) -- the
    correctness of y* ~ Categorical(p) -- and the statistic is recomputed on the rows."""
    confidence, correct = top_label(y, proba)
    scores = sorted(set(confidence))
    counts = [confidence.count(s) for s in scores]
    observed = statistic(confidence, correct)
    rng = np.random.default_rng(seed)
    null = []
    for _ in range(n_resamples):
        drawn = rng.binomial(counts, scores)
        rows_v: list[float] = []
        rows_o: list[float] = []
        for score, count, positives in zip(scores, counts, drawn, strict=True):
            rows_v += [score] * count
            rows_o += [1.0] * int(positives) + [0.0] * int(count - positives)
        null.append(statistic(rows_v, rows_o))
    exceed = sum(1 for value in null if value >= observed)
    return observed, (1 + exceed) / (1 + n_resamples), null


@pytest.mark.slow
@pytest.mark.parametrize(("statistic", "reference"),
                         [("kce", loop_kce), ("smooth_ece", relplot_smooth_ece)])
@pytest.mark.parametrize("temper", [1.0, 1.6])
def test_equals_the_plain_loop_reference(statistic: calibration_test.Statistic,
                                         reference: Callable[..., float],
                                         temper: float) -> None:
    y, proba = three_classes(temper, 90, np.random.default_rng(3))
    proba = np.round(proba, 1)  # repeated scores: groups of several rows
    proba /= proba.sum(axis=1, keepdims=True)
    observed, p_value, null = reference_test(y, proba, reference, 60, seed=11)
    result = consistency_resampling_test(y, proba, statistic=statistic, n_resamples=60,
                                         random_state=11)
    assert result.statistic == pytest.approx(observed, rel=1e-9, abs=1e-12)
    assert result.p_value == p_value
    assert result.null_quantile == pytest.approx(np.quantile(null, 0.95), rel=1e-9)
    assert (result.n, result.n_resamples, result.pooled) == (90, 60, False)
    assert result.n_groups == len(set(top_label(y, proba)[0]))


@pytest.mark.parametrize("statistic", ["kce", "smooth_ece"])
@pytest.mark.parametrize(("generate", "view"), [(binary, "positive"), (binary, "top_label"),
                                                (three_classes, "top_label")])
def test_statistic_is_the_measure_on_the_data(statistic: calibration_test.Statistic,
                                              generate: Generate,
                                              view: calibration_test.TestView) -> None:
    y, proba = generate(1.3, 2000, np.random.default_rng(5))
    measure = {"kce": metrics.laplace_kernel_calibration_error,
               "smooth_ece": metrics.smooth_ece}[statistic]
    result = consistency_resampling_test(y, proba, statistic=statistic, view=view,
                                         n_resamples=20)
    assert result.statistic == pytest.approx(measure(y, proba, view=view), rel=1e-9)
    assert not result.pooled and result.view == view
    assert result.resampling.startswith("exact: 2,000 rows")


def test_large_tables_with_discrete_scores_are_grouped_exactly() -> None:
    y, p = binary(0.7, 30_000, np.random.default_rng(6))
    p = np.round(p, 3)
    result = consistency_resampling_test(y, p, n_resamples=20)
    assert not result.pooled
    # 1 - 0.388 is 0.6120000000000001, not 0.612: scores within 1e-12 count as one
    assert result.n_groups == np.unique(np.round(np.maximum(p, 1.0 - p), 9)).size
    assert result.statistic == pytest.approx(metrics.laplace_kernel_calibration_error(y, p),
                                             rel=1e-9)


def test_large_tables_with_continuous_scores_are_pooled_within_a_cell() -> None:
    y, proba = three_classes(0.7, 30_000, np.random.default_rng(7))
    result = consistency_resampling_test(y, proba, n_resamples=20)
    assert result.pooled
    assert result.resampling.startswith("pooled: 30,000 rows")
    # scores move by less than 1/8192, the statistic by about as much
    assert result.statistic == pytest.approx(
        metrics.laplace_kernel_calibration_error(y, proba), abs=1e-4)
    assert result.p_value == 1 / 21  # t = 0.7 on 30,000 rows: far outside the null


def test_result_is_frozen_and_says_what_it_tests() -> None:
    y, p = binary(1.0, 500, np.random.default_rng(8))
    result = calibcore.consistency_resampling_test(y, p)
    assert isinstance(result, calibcore.CalibrationTestResult)
    with pytest.raises(AttributeError):
        result.p_value = 0.5  # type: ignore[misc]
    assert "consistency resampling" in result.test
    assert result.statistic_name == "kCE"
    assert "calibrated" in result.description and "kCE" in result.description
    assert result.n_resamples == 200
    assert result.verdict() == ("the probabilities are unlikely to be calibrated"
                                if result.p_value <= 0.05
                                else "no evidence of miscalibration at the 5% level")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"view": "classwise"}, "top_label or positive"),
    ({"n_resamples": 0}, "n_resamples"),
    ({"statistic": "ece"}, "statistic must be one of kce, smooth_ece"),
])
def test_rejects_bad_options(kwargs: dict[str, object], message: str) -> None:
    y, p = binary(1.0, 50, np.random.default_rng(9))
    with pytest.raises(CalibrationInputError, match=message):
        consistency_resampling_test(y, p, **kwargs)  # type: ignore[arg-type]


def test_positive_view_needs_a_binary_problem() -> None:
    y, proba = three_classes(1.0, 50, np.random.default_rng(10))
    with pytest.raises(CalibrationInputError, match="binary"):
        consistency_resampling_test(y, proba, view="positive")


@st.composite
def predictions(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 40))
    n_classes = draw(st.integers(2, 4))
    # a few distinct values, 0 and 1 among them, so scores tie and hit the ends
    values = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.8, 1.0])
    raw = np.array(draw(st.lists(st.lists(values, min_size=n_classes, max_size=n_classes),
                                 min_size=n, max_size=n)))
    raw[raw.sum(axis=1) == 0, 0] = 1.0
    labels = np.array(draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n)))
    return labels, raw / raw.sum(axis=1, keepdims=True)


@pytest.mark.slow
@settings(max_examples=60)
@given(data=predictions(), seed=st.integers(0, 2**32 - 1),
       statistic=st.sampled_from(["kce", "smooth_ece"]), n_resamples=st.integers(1, 30))
def test_p_value_is_in_range_deterministic_and_ignores_row_order(
        data: tuple[np.ndarray, np.ndarray], seed: int,
        statistic: calibration_test.Statistic, n_resamples: int) -> None:
    y, proba = data
    result = consistency_resampling_test(y, proba, statistic=statistic,
                                         n_resamples=n_resamples, random_state=seed)
    assert 1 / (1 + n_resamples) <= result.p_value <= 1.0
    assert result.statistic >= 0.0 and result.null_quantile >= 0.0
    again = consistency_resampling_test(y, proba, statistic=statistic,
                                        n_resamples=n_resamples, random_state=seed)
    assert again == result
    order = np.random.default_rng(seed).permutation(y.size)
    shuffled = consistency_resampling_test(y[order], proba[order], statistic=statistic,
                                           n_resamples=n_resamples, random_state=seed)
    assert shuffled.p_value == result.p_value
    assert shuffled.statistic == pytest.approx(result.statistic, rel=1e-9, abs=1e-12)


def rejection_rate(generate: Generate, temper: float, *, replications: int, n: int,
                   n_resamples: int, seed: int,
                   view: calibration_test.TestView = "top_label") -> float:
    """Share of ``replications`` data sets of ``n`` rows on which the test rejects at 5%."""
    rng = np.random.default_rng(seed)
    rejections = 0
    for replication in range(replications):
        y, proba = generate(temper, n, rng)
        resamples = np.random.default_rng([seed, replication])
        result = consistency_resampling_test(y, proba, n_resamples=n_resamples,
                                             random_state=resamples, view=view)
        rejections += result.rejects(0.05)
    return rejections / replications


@pytest.mark.slow
@pytest.mark.parametrize(("generate", "view"), [(binary, "positive"),
                                                (three_classes, "top_label")])
def test_size_on_calibrated_data_is_five_percent(generate: Generate,
                                                 view: calibration_test.TestView) -> None:
    # 199 resamples: p <= 0.05 exactly when at most 9 of them reach T, which a valid
    # test does with probability 10/200; 400 replications put the rate within +/-2 points
    # of 5% with probability about 0.93 (binomial standard deviation 1.1 points)
    rate = rejection_rate(generate, 1.0, replications=400, n=1000, n_resamples=199,
                          seed=2024, view=view)
    assert 0.03 <= rate <= 0.07


@pytest.mark.slow
@pytest.mark.parametrize("generate", [binary, three_classes])
@pytest.mark.parametrize("temper", [0.5, 2.0])
def test_power_far_from_calibration_on_the_tempered_family(generate: Generate,
                                                           temper: float) -> None:
    rate = rejection_rate(generate, temper, replications=40, n=1000, n_resamples=99, seed=7)
    assert rate >= 0.95


@pytest.mark.slow
def test_power_grows_with_the_distance_from_calibration() -> None:
    tempers = (0.8, 0.9, 1.1, 1.25)
    rates = {t: rejection_rate(binary, t, replications=200, n=1000, n_resamples=99, seed=1)
             for t in tempers}
    assert rates[0.8] > rates[0.9] > 0.05 and rates[1.25] > rates[1.1] > 0.05
