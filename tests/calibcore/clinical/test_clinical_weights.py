"""The weighted clinical report: integer weights give exactly the report of the rows
repeated by their weights (O:E, calibration-in-the-large, intercept, slope, their
intervals, Spiegelhalter's z and Hosmer-Lemeshow); the logistic fits equal statsmodels'
GLM with ``freq_weights``; the lowess quantities stay unweighted and say so."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from calibcore.clinical import UNWEIGHTED_QUANTITIES, clinical_calibration, hosmer_lemeshow
from calibcore.clinical.hosmer_lemeshow import weighted_quantiles
from calibcore.exceptions import CalibrationInputError

WEIGHTED = ("oe_ratio", "calibration_in_the_large", "calibration_intercept",
            "calibration_slope", "spiegelhalter_z", "spiegelhalter_p")


def _data(n: int = 700, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 4, n)
    y = (rng.random(n) < np.clip(1.2 * p, 0, 1)).astype(int)
    weights = rng.integers(0, 4, n)
    weights[:2] = 1
    return y, p, weights


@pytest.fixture(scope="module")
def reports() -> tuple:  # type: ignore[type-arg]
    y, p, weights = _data()
    return (clinical_calibration(y, p, sample_weight=weights),
            clinical_calibration(np.repeat(y, weights), np.repeat(p, weights)), (y, p, weights))


def test_integer_weights_give_the_repeated_rows_report(reports) -> None:  # type: ignore[no-untyped-def]
    weighted, repeated, _ = reports
    for name in WEIGHTED:
        ours, theirs = getattr(weighted, name), getattr(repeated, name)
        assert ours.value == pytest.approx(theirs.value, abs=1e-9, rel=0), name
        if theirs.lower is not None:
            assert ours.lower == pytest.approx(theirs.lower, abs=1e-9, rel=0), name
            assert ours.upper == pytest.approx(theirs.upper, abs=1e-9, rel=0), name
    ours_hl, theirs_hl = weighted.hosmer_lemeshow, repeated.hosmer_lemeshow
    assert ours_hl.value == pytest.approx(theirs_hl.value, abs=1e-9)
    assert ours_hl.df == theirs_hl.df and ours_hl.sizes == theirs_hl.sizes
    np.testing.assert_allclose(ours_hl.observed, theirs_hl.observed, atol=1e-9)
    np.testing.assert_allclose(ours_hl.expected, theirs_hl.expected, atol=1e-9)
    assert weighted.levels[:2] == repeated.levels[:2]  # mean and weak: weighted quantities
    assert weighted.total_weight == repeated.n and weighted.events_weight == repeated.n_events


def test_the_fits_equal_statsmodels_glm_with_freq_weights(reports) -> None:  # type: ignore[no-untyped-def]
    weighted, _, (y, p, weights) = reports
    logit = special.logit(p)
    free = sm.GLM(y, sm.add_constant(logit), family=sm.families.Binomial(),
                  freq_weights=weights).fit(tol=1e-13)
    large = sm.GLM(y, np.ones((y.size, 1)), family=sm.families.Binomial(), offset=logit,
                   freq_weights=weights).fit(tol=1e-13)
    z = stats.norm.ppf(0.975)
    assert weighted.calibration_intercept.value == pytest.approx(free.params[0], abs=1e-8)
    assert weighted.calibration_slope.value == pytest.approx(free.params[1], abs=1e-8)
    assert weighted.calibration_slope.upper - weighted.calibration_slope.value == \
        pytest.approx(z * free.bse[1], rel=1e-6)
    assert weighted.calibration_in_the_large.value == pytest.approx(large.params[0], abs=1e-8)
    assert weighted.calibration_in_the_large.upper - weighted.calibration_in_the_large.value \
        == pytest.approx(z * large.bse[0], rel=1e-6)


def test_oe_and_spiegelhalter_are_the_weighted_sums_by_hand(reports) -> None:  # type: ignore[no-untyped-def]
    weighted, _, (y, p, weights) = reports
    assert weighted.oe_ratio.value == pytest.approx(
        sum(w * v for w, v in zip(weights, y, strict=True))
        / sum(w * q for w, q in zip(weights, p, strict=True)), rel=1e-12)
    lever = 1 - 2 * p
    z = (weights * (y - p) * lever).sum() / np.sqrt((weights * lever**2 * p * (1 - p)).sum())
    assert weighted.spiegelhalter_z.value == pytest.approx(z, rel=1e-12)


def test_the_lowess_quantities_are_unweighted_and_named(reports) -> None:  # type: ignore[no-untyped-def]
    weighted, _, (y, p, _) = reports
    plain = clinical_calibration(y, p)
    assert weighted.weighted and weighted.unweighted == UNWEIGHTED_QUANTITIES
    for name in ("ici", "e50", "e90", "emax"):
        assert getattr(weighted, name) == getattr(plain, name)
    np.testing.assert_array_equal(weighted.curve.observed, plain.curve.observed)
    assert any("lowess takes no weights" in note for note in weighted.notes)
    assert not plain.weighted and plain.unweighted == () and plain.n_eff is None
    assert weighted.n_eff == pytest.approx(weighted.total_weight**2
                                           / float((_data()[2] ** 2).sum()))


def test_unit_weights_change_no_weighted_quantity() -> None:
    y, p, _ = _data(300, seed=2)
    ones = clinical_calibration(y, p, sample_weight=np.ones(y.size))
    plain = clinical_calibration(y, p)
    for name in WEIGHTED:
        assert getattr(ones, name).value == pytest.approx(getattr(plain, name).value,
                                                          abs=1e-12)
    assert ones.hosmer_lemeshow.value == pytest.approx(plain.hosmer_lemeshow.value, abs=1e-12)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 4), min_size=3, max_size=40), st.integers(0, 10**6))
def test_weighted_quantiles_are_those_of_the_repeated_rows(counts: list[int],
                                                            seed: int) -> None:
    weights = np.array(counts, dtype=float)
    if weights.sum() < 1:
        weights[0] = 1
    p = np.sort(np.random.default_rng(seed).random(weights.size).round(2))
    levels = np.linspace(0, 1, 11)
    np.testing.assert_array_equal(weighted_quantiles(p, weights, levels),
                                  np.quantile(np.repeat(p, weights.astype(int)), levels))


def test_hosmer_lemeshow_takes_weights_and_refuses_bad_ones() -> None:
    y, p, weights = _data(400, seed=4)
    ours = hosmer_lemeshow(y, p, sample_weight=weights)
    theirs = hosmer_lemeshow(np.repeat(y, weights), np.repeat(p, weights))
    assert ours.value == pytest.approx(theirs.value, abs=1e-9) and ours.sizes == theirs.sizes
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        hosmer_lemeshow(y, p, sample_weight=-weights - 1)
    with pytest.raises(CalibrationInputError, match="positive weight"):
        clinical_calibration(y, p, sample_weight=np.where(y == 1, 0.0, 1.0))
