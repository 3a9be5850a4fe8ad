"""The compiled window moments are NumPy's (points x groups) computation, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.partitioned._window_moments import window_sums


def _numpy_window_sums(points, bandwidth, centres, weights, n_powers, squared):  # type: ignore[no-untyped-def]
    """The matrix computation: scaled distances, tricube weights, each power's row sums."""
    scaled = (centres[None, :] - points[:, None]) * (1.0 / bandwidth)[:, None]
    distance = np.minimum(np.abs(scaled), 1.0)
    inside = 1.0 - distance * distance * distance
    kernel = inside * inside * inside
    term = (kernel * kernel if squared else kernel) * weights[None, :]
    sums = np.empty((points.size, n_powers))
    for power in range(n_powers):
        sums[:, power] = term.sum(axis=1)
        term = term * scaled
    return sums


@settings(max_examples=60)
@given(n_points=st.integers(1, 40), n_groups=st.integers(0, 3_000),
       n_powers=st.integers(1, 5), squared=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_window_sums_are_numpys_row_sums(n_points, n_groups, n_powers, squared,
                                         seed) -> None:
    rng = np.random.default_rng(seed)
    centres = np.sort(rng.normal(size=n_groups) * 10.0 ** rng.integers(-3, 4))
    weights = rng.integers(1, 50, size=n_groups) * rng.uniform(0.5, 2.0, size=n_groups)
    points = rng.normal(size=n_points) * 2.0
    bandwidth = rng.uniform(0.05, 5.0, size=n_points)
    bandwidth[::7] = np.abs(centres[0] - points[::7]) if n_groups else 1.0  # a group at h
    np.testing.assert_array_equal(
        window_sums(points, bandwidth, centres, weights, n_powers, squared=squared),
        _numpy_window_sums(points, bandwidth, centres, weights, n_powers, squared))


@pytest.mark.parametrize("n_groups", [127, 128, 129, 1_000, 20_011])
def test_long_rows_are_summed_pairwise_as_numpy_sums_them(n_groups: int) -> None:
    rng = np.random.default_rng(n_groups)
    centres = rng.uniform(-1.0, 1.0, size=n_groups)
    weights = rng.exponential(size=n_groups) * 10.0 ** rng.integers(-6, 7, size=n_groups)
    points, bandwidth = np.array([-0.3, 0.0, 0.9]), np.array([0.5, 3.0, 0.01])
    np.testing.assert_array_equal(
        window_sums(points, bandwidth, centres, weights, 5, squared=False),
        _numpy_window_sums(points, bandwidth, centres, weights, 5, False))


def test_a_bandwidth_for_each_point_is_needed() -> None:
    with pytest.raises(ValueError, match="bandwidth"):
        window_sums(np.zeros(3), np.ones(2), np.zeros(4), np.ones(4), 3, squared=False)
