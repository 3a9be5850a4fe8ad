"""Proportion intervals: statsmodels' bounds, moved onto the estimate only where rounding put
them past it (Wilson's low end of 0 hits in 7 rows is 2.8e-17 > 0); the Clopper-Pearson
interval against scipy's exact binomial test, its coverage (exact and in reliability
diagrams by simulation), and with row weights on Kish's effective size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import binned_reliability, proportion_interval, with_interval
from calibcore.variable import variable_bins

#: statsmodels' name of each interval (an independent implementation of both)
STATSMODELS = {"wilson": "wilson", "clopper_pearson": "beta"}


@given(n=st.integers(1, 10**7), share=st.floats(0, 1),
       method=st.sampled_from(["wilson", "clopper_pearson"]),
       level=st.sampled_from([0.5, 0.9, 0.95, 0.99]))
def test_the_interval_contains_the_estimate_and_is_statsmodels_otherwise(
        n: int, share: float, method: str, level: float) -> None:
    k = round(share * n)
    low, high = proportion_interval([k], [n], confidence_level=level,
                                    method=method)  # type: ignore[arg-type]
    reference_low, reference_high = proportion_confint(k, n, alpha=1 - level,
                                                       method=STATSMODELS[method])
    assert 0.0 <= low[0] <= k / n <= high[0] <= 1.0
    assert low[0] == pytest.approx(reference_low, abs=1e-15)
    assert high[0] == pytest.approx(reference_high, abs=1e-15)


def test_every_count_up_to_400_rows_is_inside() -> None:
    n = np.repeat(np.arange(1, 401), np.arange(2, 402))
    k = np.concatenate([np.arange(m + 1) for m in range(1, 401)])
    raw_low, raw_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert ((raw_low > k / n) | (raw_high < k / n)).sum() > 100  # what statsmodels gives
    low, high = proportion_interval(k, n)
    assert np.all((low <= k / n) & (k / n <= high))


def test_diagrams_and_variable_curves_contain_a_rate_of_zero() -> None:
    """Seven rows, none of them positive, in one bin: the diagram's and the variable
    curve's intervals start at exactly 0 (statsmodels alone gives 2.8e-17)."""
    proba = np.column_stack([np.full(7, 0.95), np.full(7, 0.05)])
    labels = np.zeros(7, dtype=np.intp)
    (diagram,) = binned_reliability(labels, proba, n_bins=10, view="positive")
    [filled] = np.flatnonzero(diagram.count)
    assert diagram.observed[filled] == 0.0 and diagram.observed_low[filled] == 0.0
    table = variable_bins(np.arange(7.0), labels, proba, n_bins=1)  # every top label right
    assert table["error"].tolist() == [0.0] and table["error_low"].tolist() == [0.0]


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 7), (1, 7), (3, 10), (10, 10), (17, 40),
                                      (199, 200), (523, 1000)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_clopper_pearson_is_scipys_exact_binomial_interval(k: int, n: int, level: float) -> None:
    reference = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    low, high = proportion_interval([k], [n], confidence_level=level, method="clopper_pearson")
    assert low[0] == pytest.approx(reference.low, abs=1e-12)
    assert high[0] == pytest.approx(reference.high, abs=1e-12)


def binomial_coverage(method: str, n: int, p: np.ndarray) -> np.ndarray:
    """The exact probability, for each p, that the interval of k ~ Binomial(n, p) holds p."""
    k = np.arange(n + 1)
    low, high = proportion_interval(k, np.full(k.size, n), method=method)  # type: ignore[arg-type]
    holds = (low[None, :] <= p[:, None]) & (p[:, None] <= high[None, :])
    return (stats.binom.pmf(k[None, :], n, p[:, None]) * holds).sum(axis=1)


@pytest.mark.parametrize("n", [5, 12, 30, 80])
def test_clopper_pearson_covers_at_least_the_nominal_level_where_wilson_does_not(n: int) -> None:
    p = np.linspace(0.001, 0.999, 999)
    exact = binomial_coverage("clopper_pearson", n, p)
    assert exact.min() >= 0.95 - 1e-9
    assert binomial_coverage("wilson", n, p).min() < 0.95  # what the option is for


@pytest.mark.slow
def test_clopper_pearson_bins_cover_their_probability_in_a_simulation() -> None:
    """Calibrated rows (fixed scores, outcomes redrawn 2,000 times, seeded): each bin's
    interval holds the bin's mean score, its expected frequency, at least 95% of the time
    up to the simulation's error; Wilson's falls short in the small bins at the ends."""
    rng = np.random.default_rng(30664)
    scores = np.concatenate([rng.uniform(0.0, 0.08, 25), rng.uniform(0.1, 0.9, 200),
                             rng.uniform(0.94, 1.0, 25)])
    outcomes = rng.uniform(size=(2000, scores.size)) < scores
    coverage = {}
    for method in ("clopper_pearson", "wilson"):
        held = []
        for row in outcomes:
            (diagram,) = binned_reliability(row.astype(int), scores, n_bins=10,
                                            view="positive", interval=method)
            edges = np.minimum(np.searchsorted(diagram.edges, scores, side="right") - 1, 9)
            truth = np.bincount(edges, weights=scores, minlength=10) / np.maximum(
                np.bincount(edges, minlength=10), 1)
            held.append((diagram.observed_low <= truth) & (truth <= diagram.observed_high))
        coverage[method] = np.mean(held, axis=0)[diagram.count > 0]
    standard_error = np.sqrt(0.95 * 0.05 / 2000)
    assert coverage["clopper_pearson"].min() >= 0.95 - 3 * standard_error
    assert coverage["clopper_pearson"].mean() >= 0.95
    assert coverage["wilson"].min() < coverage["clopper_pearson"].min()


def test_weighted_bins_rest_on_kish_size_with_either_interval() -> None:
    rng = np.random.default_rng(4)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    weights = rng.uniform(0.2, 3.0, size=300)
    (diagram,) = binned_reliability(y, p, n_bins=5, view="positive", sample_weight=weights,
                                    interval="clopper_pearson")
    assert diagram.interval == "clopper_pearson" and diagram.n_eff is not None
    for b in range(5):
        inside = (p >= diagram.edges[b]) & ((p < diagram.edges[b + 1]) | (b == 4))
        w = weights[inside]
        n_eff = w.sum() ** 2 / np.square(w).sum()
        rate = (w * y[inside]).sum() / w.sum()
        low, high = proportion_confint(round(rate * n_eff), n_eff, alpha=0.05, method="beta")
        assert diagram.n_eff[b] == pytest.approx(n_eff, rel=1e-12)
        assert diagram.observed_low[b] == pytest.approx(min(low, rate), abs=1e-12)
        assert diagram.observed_high[b] == pytest.approx(max(high, rate), abs=1e-12)


def test_with_interval_redraws_a_diagrams_intervals() -> None:
    rng = np.random.default_rng(5)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p).astype(int)
    (wilson,) = binned_reliability(y, p, n_bins=8, view="positive")
    (exact,) = binned_reliability(y, p, n_bins=8, view="positive", interval="clopper_pearson")
    redrawn = with_interval(wilson, "clopper_pearson")
    assert redrawn.interval == "clopper_pearson" and wilson.interval == "wilson"
    np.testing.assert_allclose(redrawn.observed_low, exact.observed_low, atol=1e-12)
    np.testing.assert_allclose(redrawn.observed_high, exact.observed_high, atol=1e-12)
    assert np.all(exact.observed_high - exact.observed_low
                  > wilson.observed_high - wilson.observed_low)


def test_an_unknown_interval_is_refused() -> None:
    with pytest.raises(CalibrationInputError, match="interval must be one of wilson, "
                                                    "clopper_pearson; got 'beta'"):
        binned_reliability([0, 1], [0.2, 0.7], interval="beta")  # type: ignore[arg-type]
