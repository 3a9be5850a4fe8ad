"""LOESS with bands (calibcore.variable.smoothing) against a brute-force reference.

The reference forms the n x n smoother matrix row by row, each row the
least-squares solution (``numpy.linalg.pinv``) of the raw, unscaled quadratic
design weighted at that point; it finds each bandwidth by sorting distances
and takes the traces of explicit matrix products: none of it shares code with
the implementation.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t

from calibcore.exceptions import CalibrationInputError
from calibcore.variable import loess, loess_many


def reference_rows(x: np.ndarray, points: np.ndarray, span: float) -> np.ndarray:
    """Smoother rows l(x0), one weighted least-squares problem per point."""
    n = x.size
    q = min(n, int(np.floor(n * span)))
    rows = np.empty((points.size, n))
    for e, centre in enumerate(points):
        distance = np.abs(x - centre)
        bandwidth = np.sort(distance)[q - 1] * max(span, 1.0)
        weights = np.where(distance < bandwidth, (1 - (distance / bandwidth) ** 3) ** 3, 0.0)
        design = np.column_stack([np.ones(n), x - centre, (x - centre) ** 2])
        root = np.sqrt(weights)
        # coefficients = (root X)^+ (root y): the intercept row of (root X)^+ times root
        rows[e] = np.linalg.pinv(design * root[:, None], rcond=1e-12)[0] * root
    return rows


def reference_loess(x, y, points, span, level=0.95):
    operator = reference_rows(x, x, span)
    rows = reference_rows(x, points, span)
    residual_maker = np.eye(x.size) - operator
    product = residual_maker.T @ residual_maker
    delta1 = np.trace(product)
    delta2 = np.trace(product @ product)
    rss = np.sum((y - operator @ y) ** 2)
    scale = np.sqrt(rss / delta1)
    dof = delta1**2 / delta2
    fit = rows @ y
    half = student_t.ppf(0.5 + level / 2, dof) * scale * np.sqrt(np.sum(rows**2, axis=1))
    return {
        "fit": fit,
        "low": fit - half,
        "high": fit + half,
        "delta1": delta1,
        "delta2": delta2,
        "degrees_of_freedom": dof,
        "residual_scale": scale,
    }


def _sample(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = {
        "uniform": lambda: rng.uniform(0, 10, n),
        "normal": lambda: rng.normal(50, 20, n),
        "lognormal": lambda: rng.lognormal(10, 1, n),
        "ties": lambda: np.round(rng.normal(0, 6, n)),
    }[kind]()
    y = (rng.random(n) < 1 / (1 + np.exp(-np.sin(x / x.std())))).astype(float)
    return x, y


@pytest.mark.parametrize(
    ("kind", "span"),
    [
        ("uniform", 0.8),
        ("normal", 0.3),
        ("lognormal", 0.8),
        ("ties", 0.5),
        ("uniform", 1.0),
        ("normal", 1.5),
    ],
)
def test_matches_brute_force_reference(kind, span):
    x, y = _sample(kind, 150, seed=1)
    points = np.concatenate([np.linspace(*np.quantile(x, [0.05, 0.95]), 37), [x.min(), x.max()]])
    result = loess(x, y, points, span=span)
    expected = reference_loess(x, y, points, span)
    assert result.exact
    for name in ("fit", "low", "high"):
        np.testing.assert_allclose(getattr(result, name), expected[name], rtol=1e-8, atol=1e-10)
    for name in ("delta1", "delta2", "degrees_of_freedom", "residual_scale"):
        assert getattr(result, name) == pytest.approx(expected[name], rel=1e-9)


def test_extrapolates_outside_the_data_like_the_reference():
    x, y = _sample("uniform", 120, seed=2)
    points = np.array([-3.0, 12.5])
    np.testing.assert_allclose(
        loess(x, y, points).fit, reference_loess(x, y, points, 0.8)["fit"], rtol=1e-8
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["uniform", "lognormal", "ties"])
def test_large_input_approximation_error_below_1e3_at_n_2000(kind):
    """The documented approximation (subsampled deltas, interpolated RSS) vs exact."""
    x, y = _sample(kind, 2000, seed=3)
    y2 = np.clip(
        0.3 + 0.1 * np.cos(x / x.std()) + 0.05 * np.random.default_rng(4).random(2000), 0, 1
    )
    points = np.linspace(*np.quantile(x, [0.05, 0.95]), 500)
    exact = loess_many(x, [y, y2], points, n_exact=2000)
    approximate = loess_many(x, [y, y2], points, n_exact=1000)
    for full, fast in zip(exact, approximate, strict=True):
        assert full.exact and not fast.exact
        np.testing.assert_allclose(fast.fit, full.fit, rtol=1e-9, atol=1e-12)
        for name in ("delta1", "delta2", "degrees_of_freedom", "residual_scale"):
            relative = abs(getattr(fast, name) - getattr(full, name)) / abs(getattr(full, name))
            assert relative < 1e-3, name
        half_exact = full.high - full.fit
        half_fast = fast.high - fast.fit
        assert np.max(np.abs(half_fast - half_exact) / half_exact) < 1e-3


def test_large_input_fit_is_exact_at_the_evaluation_points():
    x, y = _sample("normal", 1500, seed=5)
    points = np.linspace(x.min() - 1, x.max() + 1, 41)
    fast = loess(x, y, points, span=0.4, n_exact=500)
    np.testing.assert_allclose(fast.fit, reference_rows(x, points, 0.4) @ y, rtol=1e-9, atol=1e-12)


def test_large_input_is_seeded():
    x, y = _sample("lognormal", 1500, seed=6)
    points = np.linspace(x.min(), x.max(), 9)
    first = loess(x, y, points, n_exact=500, random_state=3)
    again = loess(x, y, points, n_exact=500, random_state=3)
    other = loess(x, y, points, n_exact=500, random_state=4)
    np.testing.assert_array_equal(first.high, again.high)
    assert first.delta1 != other.delta1


def test_more_ties_than_neighbours_fits_the_tied_mean():
    rng = np.random.default_rng(7)
    x = np.concatenate([np.zeros(80), rng.uniform(1, 2, 20)])
    y = rng.random(100)
    result = loess(x, y, np.array([0.0]), span=0.5)
    assert result.fit[0] == pytest.approx(y[:80].mean(), rel=1e-10)
    assert np.isfinite(result.high[0])


def test_constant_response_has_a_zero_width_band():
    x = np.random.default_rng(8).normal(size=300)
    result = loess(x, np.full(300, 0.25), np.linspace(-1, 1, 11))
    np.testing.assert_allclose(result.fit, 0.25, rtol=1e-12)
    np.testing.assert_allclose(result.high - result.low, 0.0, atol=1e-12)


X6 = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
Y6 = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize(
    ("x", "y", "x_eval", "options", "message"),
    [
        ([0.0, 1.0, np.nan, 3.0, 4.0, 5.0], Y6, [1.0], {}, "non-finite"),
        (X6, Y6, [1.0], {"span": 0.6}, "at least 4"),
        (X6, Y6, [1.0], {"span": 0.0}, "span"),
        (X6, Y6[:3], [1.0], {}, "shape"),
        (X6, Y6, [], {}, "non-empty"),
        (X6, Y6, [1.0], {"confidence_level": 1.0}, "confidence_level"),
    ],
)
def test_rejects_bad_input(x, y, x_eval, options, message):
    with pytest.raises(CalibrationInputError, match=message):
        loess(x, y, x_eval, **options)


finite = st.floats(-5, 5, allow_nan=False, allow_subnormal=False)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(20, 60),
    span=st.floats(0.5, 1.2),
    coefficients=st.tuples(finite, finite, finite),
)
def test_reproduces_quadratics_exactly(seed, n, span, coefficients):
    """A local quadratic reproduces any quadratic: fit = truth, RSS = 0, no band.

    (At least 10 neighbours, so no window hinges on one point of almost zero weight.)
    """
    x = np.random.default_rng(seed).uniform(-3, 3, n)
    a, b, c = coefficients
    points = np.linspace(-2.5, 2.5, 7)
    result = loess(x, a + b * x + c * x**2, points, span=span)
    np.testing.assert_allclose(result.fit, a + b * points + c * points**2, rtol=1e-7, atol=1e-7)
    if not np.isnan(result.residual_scale):  # NaN: every window interpolates, L = I
        np.testing.assert_allclose(result.high - result.low, 0.0, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(10, 80),
    scale=st.floats(0.01, 100).map(lambda s: s if s != 0 else 1.0),
    shift=st.floats(-100, 100),
    y_scale=st.floats(-10, 10).filter(lambda s: abs(s) > 1e-3),
    y_shift=st.floats(-10, 10),
)
def test_equivariance_and_row_order(seed, n, scale, shift, y_scale, y_shift):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = rng.random(n)
    points = np.linspace(-1, 1, 5)
    base = loess(x, y, points)
    # affine change of x (the bandwidth follows), affine change of y, shuffled rows
    order = rng.permutation(n)
    moved = loess(x[order] * scale + shift, y[order] * y_scale + y_shift, points * scale + shift)
    np.testing.assert_allclose(moved.fit, base.fit * y_scale + y_shift, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        moved.high - moved.low, (base.high - base.low) * abs(y_scale), rtol=1e-6, atol=1e-6
    )
    assert np.all(base.low <= base.fit) and np.all(base.fit <= base.high)


def test_a_window_ending_on_a_long_tie_is_widened_past_it():
    """x0 = 0.5 between one row at 0 and 60 rows at 1 (more than q = 30): the 30 nearest
    rows all lie at distance 0.5 and would weigh 0 (a fit of 0/0, reported as 0 before).
    The bandwidth goes half-way to the next distance at which rows lie, written out here."""
    rng = np.random.default_rng(11)
    x = np.concatenate([[0.0], np.ones(60), rng.uniform(2, 3, 39)])
    y = (rng.random(100) < np.where(x < 1.5, 0.3, 0.8)).astype(float)
    y[0] = 1.0
    points = np.array([0.25, 0.5, 0.75, 1.0, 2.5])
    q = 30
    expected = []
    for centre in points:
        distance = np.abs(x - centre)
        bandwidth = np.sort(distance)[q - 1]
        if not (distance < bandwidth).any():
            bandwidth = (bandwidth + distance[distance > bandwidth].min()) / 2
        weights = np.where(distance < bandwidth, (1 - (distance / bandwidth) ** 3) ** 3, 0.0)
        d = (x - centre) / bandwidth  # windows of one or two values: the min-norm fit in d
        design = np.column_stack([np.ones(x.size), d, d**2])
        root = np.sqrt(weights)
        expected.append(np.linalg.pinv(design * root[:, None], rcond=1e-12)[0] * root @ y)
    fit = loess(x, y, points, span=0.3).fit
    np.testing.assert_allclose(fit, expected, rtol=1e-9, atol=1e-12)
    assert fit[1] > 0.2  # between the row at 0 (y = 1) and the tie's mean, not 0
    assert fit[3] == pytest.approx(y[1:61].mean(), rel=1e-12)  # more than q ties at x0


def test_leverage_is_the_squared_norm_of_the_smoother_row():
    """LoessFit.leverage is ||l(x0)||^2 of the brute-force smoother rows (exact path), and
    loess_leverage gives the same on the large path's moments."""
    from calibcore.variable import loess_leverage

    x, y = _sample("normal", 150, seed=4)
    points = np.linspace(x.min() - 5, x.max() + 20, 23)
    expected = (reference_rows(x, points, 0.3) ** 2).sum(axis=1)
    result = loess(x, y, points, span=0.3)
    np.testing.assert_allclose(result.leverage, expected, rtol=1e-8)
    np.testing.assert_allclose(loess_leverage(np.sort(x), points, span=0.3), expected,
                               rtol=1e-6)
    assert result.leverage[-1] > 1.0 > result.leverage[points.size // 2]  # beyond the data
