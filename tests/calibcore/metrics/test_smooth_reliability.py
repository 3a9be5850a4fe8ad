"""Smooth reliability diagram (calibcore.metrics.smooth_reliability) against
relplot 1.0.3's kernel smoother and density, and an explicit row bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
import relplot
from hypothesis import given, settings
from hypothesis import strategies as st
from relplot.estimators import KernelSmoother
from relplot.kernels import ReflectedGaussianKernel

from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import smooth_reliability


def skewed(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Scores f ~ U[0, 1] with outcomes ~ Bernoulli(f^2): overconfident in P(class 1)."""
    rng = np.random.default_rng(seed)
    f = rng.uniform(size=n)
    return (rng.uniform(size=n) < f**2).astype(int), f


def test_curve_density_and_bandwidth_match_relplot() -> None:
    y, f = skewed(2000)
    (diagram,) = smooth_reliability(y, f, view="positive", n_bootstrap=0)
    ece, sigma = relplot.smECE(f, y.astype(float), return_width=True)
    kernel = ReflectedGaussianKernel(sigma)
    curve = KernelSmoother(kernel).fit(f.reshape(-1, 1), y.astype(float))
    assert diagram.bandwidth == sigma
    assert diagram.smooth_ece == pytest.approx(ece, abs=1e-9)
    np.testing.assert_allclose(diagram.curve, curve.predict(diagram.grid.reshape(-1, 1)), atol=1e-9)
    np.testing.assert_allclose(diagram.density, kernel.kde(f, diagram.grid), atol=1e-9)
    assert diagram.n == 2000 and diagram.grid.size == 200
    np.testing.assert_array_equal(diagram.curve_low, diagram.curve)


def test_band_matches_an_explicit_row_bootstrap() -> None:
    y, f = skewed(1500, seed=1)
    (diagram,) = smooth_reliability(y, f, view="positive", n_bootstrap=400, random_state=2)
    smoother = KernelSmoother(ReflectedGaussianKernel(diagram.bandwidth))
    rng = np.random.default_rng(7)
    curves = []
    for _ in range(400):
        rows = rng.integers(0, y.size, size=y.size)
        fitted = smoother.fit(f[rows].reshape(-1, 1), y[rows].astype(float))
        curves.append(fitted.predict(diagram.grid.reshape(-1, 1)))
    low, high = np.quantile(curves, [0.025, 0.975], axis=0)
    inner = slice(10, -10)  # both are noisy where the scores thin out at the ends
    width = np.median(high - low)
    assert np.max(np.abs(diagram.curve_low - low)[inner]) < 0.2 * width
    assert np.max(np.abs(diagram.curve_high - high)[inner]) < 0.2 * width
    inside = (diagram.curve_low <= diagram.curve) & (diagram.curve <= diagram.curve_high)
    assert inside.mean() > 0.95


def test_band_narrows_with_more_rows() -> None:
    widths = []
    for n in (500, 8000):
        y, f = skewed(n, seed=3)
        (diagram,) = smooth_reliability(y, f, view="positive", bandwidth=0.1, n_bootstrap=100)
        widths.append(np.median(diagram.curve_high - diagram.curve_low))
    assert widths[1] < widths[0] / 2.5  # sqrt(16) = 4 in theory


def test_one_diagram_per_class_in_the_classwise_view() -> None:
    rng = np.random.default_rng(4)
    proba = rng.dirichlet(np.ones(3), size=400)
    labels = np.array([rng.choice(3, p=row) for row in proba])
    diagrams = smooth_reliability(labels, proba, view="classwise", n_bootstrap=20, n_points=50)
    assert [d.label for d in diagrams] == ["class 0", "class 1", "class 2"]
    assert all(d.curve.shape == (50,) and d.n == 400 for d in diagrams)


def test_seeded_band_is_reproducible() -> None:
    y, f = skewed(300)
    first = smooth_reliability(y, f, n_bootstrap=30, random_state=5)[0]
    again = smooth_reliability(y, f, n_bootstrap=30, random_state=5)[0]
    np.testing.assert_array_equal(first.curve_high, again.curve_high)


@pytest.mark.parametrize(
    "options",
    [{"n_points": 1}, {"n_bootstrap": -2}, {"confidence_level": 0}, {"bandwidth": 0.0}],
)
def test_bad_options_are_rejected(options) -> None:
    y, f = skewed(50)
    with pytest.raises(CalibrationInputError):
        smooth_reliability(y, f, **options)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.integers(3, 200), st.integers(0, 10_000))
def test_curves_and_band_are_probabilities(n: int, seed: int) -> None:
    y, f = skewed(n, seed=seed)
    (diagram,) = smooth_reliability(y, f, n_bootstrap=15, random_state=seed)
    for values in (diagram.curve, diagram.curve_low, diagram.curve_high):
        assert np.all(values >= -1e-12) and np.all(values <= 1 + 1e-12)
    assert np.all(diagram.curve_low <= diagram.curve_high)
    assert np.all(diagram.density >= 0)
    # relplot truncates the kernel at +-0.5, so wide kernels lose mass (1e-3: trapezoid rule).
    assert 0.0 < np.trapezoid(diagram.density, diagram.grid) <= 1.001


def test_band_drawn_over_filled_cells_equals_drawing_every_cell() -> None:
    # the band's resamples drawn over every cell of the grid (empty ones included), as
    # written here, against the filled cells only: bit for bit, since numpy's
    # multinomial skips zero-probability cells without drawing
    from calibcore.metrics import reliability
    from calibcore.metrics.kernel_smoothing import (
        DENSITY_EPS,
        grid_size,
        interpolate,
        reflected_gaussian_convolve,
    )

    rng = np.random.default_rng(12)
    scores = np.sort(np.concatenate([rng.beta(0.3, 20, 3000), rng.uniform(0.2, 0.6, 40)]))
    outcomes = (rng.random(scores.size) < scores).astype(np.intp)
    weights = np.ones(scores.size)
    grid, bandwidth, b = np.linspace(0, 1, 200), 0.004, 50
    n_grid = grid_size(bandwidth)
    position = scores * (n_grid - 1)
    left = np.clip(position.astype(np.intp), 0, n_grid - 2)
    cells = 2 * left + outcomes
    counts = np.bincount(cells, minlength=2 * (n_grid - 1)).astype(float)
    share = np.bincount(cells, weights=position - left, minlength=counts.size)
    share = np.divide(share, counts, out=np.zeros_like(share), where=counts > 0)
    assert counts[-1] == 0 and (counts == 0).mean() > 0.9  # mostly empty, last one too
    draws = np.random.default_rng(5).multinomial(scores.size, counts / counts.sum(), size=b)
    right = (draws * share).reshape(b, n_grid - 1, 2)
    rest = (draws * (1.0 - share)).reshape(b, n_grid - 1, 2)
    sums = np.zeros((2 * b, n_grid))
    sums[:b, :-1] += rest[:, :, 1]
    sums[:b, 1:] += right[:, :, 1]
    sums[b:, :-1] += rest.sum(axis=2)
    sums[b:, 1:] += right.sum(axis=2)
    smoothed = interpolate(reflected_gaussian_convolve(sums, bandwidth), grid)
    expected = np.clip(smoothed[:b] / (smoothed[b:] + DENSITY_EPS), 0.0, 1.0)
    curves = reliability._bootstrap_curves(scores, outcomes, weights, bandwidth, grid, b,
                                           np.random.default_rng(5))
    assert np.array_equal(curves, expected)
