"""Proportion intervals: statsmodels' bounds, moved onto the estimate only where rounding put
them past it (Wilson's low end of 0 hits in 7 rows is 2.8e-17 > 0)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from calibcore.metrics import binned_reliability, proportion_interval
from calibcore.variable import variable_bins


@given(n=st.integers(1, 10**7), share=st.floats(0, 1), method=st.sampled_from(["wilson", "beta"]),
       level=st.sampled_from([0.5, 0.9, 0.95, 0.99]))
def test_the_interval_contains_the_estimate_and_is_statsmodels_otherwise(
        n: int, share: float, method: str, level: float) -> None:
    k = round(share * n)
    low, high = proportion_interval([k], [n], confidence_level=level, method=method)
    reference_low, reference_high = proportion_confint(k, n, alpha=1 - level, method=method)
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
