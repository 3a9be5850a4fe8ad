"""The clinical calibration report against R's rms::val.prob and glm (golden values made by
tests/golden/make_clinical_golden.R, never run here), statsmodels' lowess and GLM, and
by-hand sums."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.nonparametric.smoothers_lowess import lowess

from calibcore.clinical import clinical_calibration, hosmer_lemeshow
from calibcore.exceptions import CalibrationInputError
from tests.conftest import REPO

GOLDEN = REPO / "tests" / "golden" / "clinical"
SETS = ("calibrated", "over_confident", "under_predicting", "small", "ties")
R_GOLDEN = json.loads((GOLDEN / "golden.json").read_text())


def golden_set(name: str) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    if name == "default_nb":
        frame = pd.read_csv(REPO / "app" / "examples" / "default_nb.csv")
        return frame["y_true"].to_numpy(), frame["y_prob"].to_numpy(), frame
    frame = pd.read_csv(GOLDEN / f"{name}.csv")
    return frame["y"].to_numpy(), frame["p"].to_numpy(), frame


@pytest.mark.parametrize("name", [*SETS, "default_nb"])
def test_equals_rms_val_prob(name: str) -> None:
    y, p, _ = golden_set(name)
    r = R_GOLDEN[name]
    report = clinical_calibration(y, p)
    assert report.n == r["n"] and report.n_events == r["events"]
    assert report.calibration_intercept.value == pytest.approx(r["intercept"], abs=1e-6)
    assert report.calibration_slope.value == pytest.approx(r["slope"], abs=1e-6)
    assert report.spiegelhalter_z.value == pytest.approx(r["spiegelhalter_z"], abs=1e-6)
    assert report.spiegelhalter_p.value == pytest.approx(r["spiegelhalter_p"], abs=1e-6)
    assert report.emax.value == pytest.approx(r["emax"], abs=1e-4)
    assert report.e90.value == pytest.approx(r["e90"], abs=1e-4)
    assert report.ici.value == pytest.approx(r["eavg"], abs=1e-4)
    assert report.e50.value == pytest.approx(r["e50"], abs=1e-4)
    # glm(y ~ 1, offset = qlogis(p), family = binomial) and its Wald interval
    citl = report.calibration_in_the_large
    assert citl.value == pytest.approx(r["calibration_in_the_large"], abs=1e-6)
    half = stats.norm.ppf(0.975) * r["calibration_in_the_large_se"]
    assert citl.lower == pytest.approx(r["calibration_in_the_large"] - half, abs=1e-6)
    assert citl.upper == pytest.approx(r["calibration_in_the_large"] + half, abs=1e-6)


@pytest.mark.parametrize("name", SETS)
def test_intervals_and_lowess_equal_r(name: str) -> None:
    y, p, frame = golden_set(name)
    r = R_GOLDEN[name]
    report = clinical_calibration(y, p)
    z = stats.norm.ppf(0.975)
    for estimate, key in ((report.calibration_intercept, "glm_intercept"),
                          (report.calibration_slope, "glm_slope")):
        assert estimate.value == pytest.approx(r[key], abs=1e-6)
        assert estimate.lower == pytest.approx(r[key] - z * r[key + "_se"], abs=1e-6)
        assert estimate.upper == pytest.approx(r[key] + z * r[key + "_se"], abs=1e-6)
    # R's lowess(p, y, iter = 0) at every row, to rounding: |fit - p| is exactly R's
    fit = np.abs(frame["r_lowess"].to_numpy() - p)
    assert report.ici.value == pytest.approx(fit.mean(), abs=1e-12)
    assert report.emax.value == pytest.approx(fit.max(), abs=1e-12)


def test_the_curve_is_statsmodels_lowess_without_robustness_steps() -> None:
    rng = np.random.default_rng(3)
    p = np.round(rng.beta(1.5, 4, 4000), 3)  # many ties
    y = (rng.random(p.size) < p**1.2).astype(int)
    report = clinical_calibration(y, p)
    order = np.argsort(p, kind="stable")
    delta = 0.01 * (p.max() - p.min())  # R's default
    reference = lowess(y[order].astype(float), p[order], frac=2 / 3, it=0, delta=delta,
                       is_sorted=True, return_sorted=False)
    at = np.searchsorted(p[order], report.curve.predicted)
    np.testing.assert_allclose(report.curve.observed, reference[at], atol=1e-12)
    assert report.curve.delta == pytest.approx(delta)
    assert report.ici.value == pytest.approx(np.abs(reference - p[order]).mean(), abs=1e-12)
    assert report.e90.value == pytest.approx(
        np.quantile(np.abs(reference - p[order]), 0.9), abs=1e-12)
    assert 50 <= report.curve.predicted.size <= 250  # anchors about delta apart


def test_logistic_fits_equal_statsmodels_glm() -> None:
    rng = np.random.default_rng(4)
    p = rng.uniform(0.02, 0.9, 3000)
    y = (rng.random(p.size) < 1 / (1 + np.exp(-(0.3 + 0.7 * np.log(p / (1 - p)))))).astype(int)
    logit = np.log(p / (1 - p))
    free = sm.GLM(y, sm.add_constant(logit), family=sm.families.Binomial()).fit()
    large = sm.GLM(y, np.ones((p.size, 1)), family=sm.families.Binomial(),
                   offset=logit).fit()
    report = clinical_calibration(y, p)
    low, high = free.conf_int().T
    assert report.calibration_intercept.value == pytest.approx(free.params[0], abs=1e-8)
    assert report.calibration_slope.value == pytest.approx(free.params[1], abs=1e-8)
    assert report.calibration_slope.lower == pytest.approx(low[1], abs=1e-7)
    assert report.calibration_slope.upper == pytest.approx(high[1], abs=1e-7)
    assert report.calibration_in_the_large.value == pytest.approx(large.params[0], abs=1e-8)
    assert report.calibration_in_the_large.lower == pytest.approx(
        large.conf_int()[0, 0], abs=1e-7)
    assert not report.levels[1].met and "too moderate" not in report.levels[1].reason


def test_oe_ratio_and_spiegelhalter_by_hand() -> None:
    y, p, _ = golden_set("under_predicting")
    report = clinical_calibration(y, p)
    observed, expected = y.sum(), p.sum()
    half = 1.959963984540054 * np.sqrt(1 / observed)
    assert report.oe_ratio.value == pytest.approx(observed / expected, rel=1e-12)
    assert report.oe_ratio.lower == pytest.approx(np.exp(np.log(observed / expected) - half))
    assert report.oe_ratio.upper == pytest.approx(np.exp(np.log(observed / expected) + half))
    numerator = sum((yi - pi) * (1 - 2 * pi) for yi, pi in zip(y, p, strict=True))
    denominator = sum((1 - 2 * pi) ** 2 * pi * (1 - pi) for pi in p)
    assert report.spiegelhalter_z.value == pytest.approx(numerator / denominator**0.5)
    # risks too low by construction: O:E above 1, calibration-in-the-large above 0
    assert report.oe_ratio.lower > 1 and report.calibration_in_the_large.lower > 0
    assert not report.levels[0].met and "under-prediction" in report.levels[0].reason
    assert report.verdict.startswith("Not even mean calibration")


def by_hand_hosmer_lemeshow(y: np.ndarray, p: np.ndarray, g: int) -> tuple[float, int]:
    """Groups (q_{k-1}, q_k] at R's type-7 quantiles, the lowest closed; a loop per group."""
    ordered = np.sort(p)
    cuts = []
    for k in range(g + 1):  # R's type 7 by its formula
        h = (p.size - 1) * k / g
        low = int(np.floor(h))
        cuts.append(ordered[low] + (h - low) * (ordered[min(low + 1, p.size - 1)] - ordered[low]))
    cuts = sorted(set(cuts))
    total, groups = 0.0, 0
    for k in range(1, len(cuts)):
        inside = [(yi, pi) for yi, pi in zip(y, p, strict=True)
                  if (cuts[k - 1] < pi or (k == 1 and pi == cuts[0])) and pi <= cuts[k]]
        if not inside:
            continue
        n_g = len(inside)
        o_g = sum(yi for yi, _ in inside)
        e_g = sum(pi for _, pi in inside)
        total += (o_g - e_g) ** 2 / (e_g * (1 - e_g / n_g))
        groups += 1
    return total, groups


@pytest.mark.parametrize("name", ["calibrated", "over_confident", "ties"])
def test_hosmer_lemeshow_by_hand(name: str) -> None:
    y, p, _ = golden_set(name)
    result = clinical_calibration(y, p).hosmer_lemeshow
    value, groups = by_hand_hosmer_lemeshow(y, p, 10)
    assert result.value == pytest.approx(value, rel=1e-10)
    assert result.n_groups == groups and result.df == groups - 2
    assert result.p_value == pytest.approx(stats.chi2.sf(value, groups - 2), rel=1e-10)
    assert sum(result.sizes) == y.size and "grouping" in result.caveat
    if name == "over_confident":
        assert result.p_value < 0.01


def test_band_is_the_variance_of_the_linear_smoother() -> None:
    """Each anchor's fit is sum_j l_j y_j: l_j found by smoothing the unit vectors with
    statsmodels, the variance sum_j l_j^2 c_j (1 - c_j) summed by hand."""
    y, p, _ = golden_set("small")
    order = np.argsort(p, kind="stable")
    x, outcome = p[order], y[order].astype(float)
    delta = 0.01 * (x[-1] - x[0])

    def smooth(values: np.ndarray) -> np.ndarray:
        return lowess(values, x, frac=2 / 3, it=0, delta=delta, is_sorted=True,
                      return_sorted=False)

    weights = np.array([smooth(np.eye(x.size)[j]) for j in range(x.size)])  # (j, row)
    fitted = np.clip(weights.T @ outcome, 0, 1)
    variance = (weights**2 * (fitted * (1 - fitted))[:, None]).sum(axis=0)
    report = clinical_calibration(y, p)
    at = np.searchsorted(x, report.curve.predicted)
    half = stats.norm.ppf(0.975) * np.sqrt(variance[at])
    np.testing.assert_allclose(report.curve.upper, np.clip(fitted[at] + half, 0, 1),
                               atol=1e-10)
    np.testing.assert_allclose(report.curve.lower, np.clip(fitted[at] - half, 0, 1),
                               atol=1e-10)


def test_hierarchy_of_a_calibrated_and_an_over_confident_model() -> None:
    rng = np.random.default_rng(8)
    p = rng.uniform(0.05, 0.95, 5000)
    y = (rng.random(p.size) < p).astype(int)
    calibrated = clinical_calibration(y, p)
    assert [level.met for level in calibrated.levels] == [True, True, True]
    assert calibrated.verdict.startswith("Consistent with moderate calibration")
    extreme = 1 / (1 + np.exp(-2 * np.log(p / (1 - p))))  # logits doubled: too extreme
    over = clinical_calibration(y, extreme)
    assert over.calibration_slope.upper < 1 and not over.levels[2].met
    assert "too extreme" in over.levels[1].reason
    assert over.calibration_slope.value == pytest.approx(0.5, abs=0.05)


def test_one_against_the_rest() -> None:
    rng = np.random.default_rng(9)
    proba = rng.dirichlet([2, 3, 4], 3000)
    labels = np.array([rng.choice(3, p=row) for row in proba])
    for k in range(3):
        multi = clinical_calibration(labels, proba, target=k)
        binary = clinical_calibration((labels == k).astype(int), proba[:, k])
        assert multi.target == f"class {k} against the rest"
        assert multi.calibration_slope == binary.calibration_slope
        assert multi.ici == binary.ici


def test_probabilities_of_zero_and_one_are_left_out_of_the_fits() -> None:
    y, p, _ = golden_set("default_nb")
    report = clinical_calibration(y, p)
    assert report.n_logistic == R_GOLDEN["default_nb"]["n_logistic"] < report.n
    assert "left out of the logistic fits" in report.notes[0]


def test_refusals() -> None:
    with pytest.raises(CalibrationInputError, match="both"):
        clinical_calibration([0, 0, 0], [0.1, 0.2, 0.3])
    with pytest.raises(CalibrationInputError, match="target"):
        clinical_calibration([0, 1, 0], [0.1, 0.2, 0.3], target=2)
    with pytest.raises(CalibrationInputError, match="span"):
        clinical_calibration([0, 1, 0], [0.1, 0.2, 0.3], span=1.5)
    with pytest.raises(CalibrationInputError, match="outside"):
        clinical_calibration([0, 1, 0], [0.1, 1.2, 0.3])


@settings(max_examples=8)
@given(seed=st.integers(0, 2**16), n=st.integers(30, 400))
def test_properties(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    y = (rng.random(n) < p).astype(int)
    y[:2] = [0, 1]
    report = clinical_calibration(y, p)
    assert 0 <= report.e50.value <= report.e90.value <= report.emax.value
    assert report.e50.value <= report.emax.value and report.ici.value <= report.emax.value
    for estimate in (report.oe_ratio, report.calibration_in_the_large):
        assert estimate.lower <= estimate.value <= estimate.upper
    assert np.all(np.diff(report.curve.predicted) > 0)
    assert np.all(report.curve.lower <= np.clip(report.curve.observed, 0, 1) + 1e-12)
    shuffled = rng.permutation(n)  # row order does not matter
    again = clinical_calibration(y[shuffled], p[shuffled])
    assert again.ici.value == pytest.approx(report.ici.value, abs=1e-12)
    assert again.calibration_slope.value == pytest.approx(report.calibration_slope.value,
                                                          abs=1e-9)
    hl = hosmer_lemeshow(y, p)
    assert hl.value == report.hosmer_lemeshow.value


@pytest.mark.slow
def test_band_coverage_and_how_often_a_calibrated_model_passes() -> None:
    """The pointwise band covers the true curve (the diagonal) about 95% of the time at
    each anchor; the simultaneous band, which judges the moderate level, covers it on
    the whole judged range about 95% of the time (a pointwise band would only about 2
    times in 3)."""
    rng = np.random.default_rng(10)
    p = rng.beta(2, 5, 2000)
    covered, met = [], 0
    for _ in range(200):
        y = (rng.random(p.size) < p).astype(int)
        report = clinical_calibration(y, p)
        curve = report.curve
        inside = (curve.lower <= curve.predicted) & (curve.predicted <= curve.upper)
        covered.append(inside.mean())
        met += report.levels[2].met
    assert 0.92 <= np.mean(covered) <= 0.97
    assert 0.90 <= met / 200 <= 0.99  # the simultaneous band: about 95%


def test_blocked_band_is_within_1e_5_of_the_exact_one() -> None:
    """Above 2,000 rows the smoother's weights are taken at blocks of rows; against the
    weights of every row (blocks of one row, exact: previous test), the standard errors
    differ by less than 1e-5 relative (4e-7 here)."""
    from calibcore.clinical._band import MAX_BLOCKS, anchor_covariance
    from calibcore.clinical._lowess import lowess_sorted, smoother_weights

    rng = np.random.default_rng(12)
    p = np.sort(rng.beta(2, 5, 20_000))
    y = (rng.random(p.size) < p).astype(float)
    fit = lowess_sorted(p, y, span=2 / 3, delta=0.01 * (p[-1] - p[0]))
    variance = np.maximum(fit.fitted * (1 - fit.fitted), 0.0)
    points = p[fit.anchors]
    blocked = np.sqrt(np.diag(anchor_covariance(p, variance, fit.lines, points)))
    rows = np.arange(p.size)
    weights = smoother_weights(p, rows, rows, fit.lines, points)
    exact = np.sqrt((weights**2 * variance).sum(axis=1))
    assert p.size > 5 * MAX_BLOCKS
    np.testing.assert_allclose(blocked, exact, rtol=1e-5)
