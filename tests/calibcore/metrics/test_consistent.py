"""Consistent calibration measures (calibcore.metrics.consistent, Błasiok et al. 2023) against
brute-force references written here, relplot 1.0.3 as the peer, and the
paper's tempered synthetic family."""

from __future__ import annotations

import numpy as np
import pytest
import relplot
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from scipy.optimize import linprog

from calibcore import metrics
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import (
    binned_ece_plus_width,
    interval_calibration_error,
    laplace_kernel_calibration_error,
    shifted_interval_rows,
    smooth_calibration_error,
    smooth_ece,
)

TEMPERATURES = (0.5, 1.0, 2.0)


def tempered_family(beta: float, n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Błasiok et al. 2023, §10.1: f ~ U[0, 1], y ~ Bernoulli(f), prediction
    f^b / (f^b + (1 - f)^b)."""
    rng = np.random.default_rng(seed)
    f = rng.uniform(size=n)
    y = (rng.uniform(size=n) < f).astype(int)
    return y, f**beta / (f**beta + (1.0 - f) ** beta)


def top_label(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Confidence and correctness of a binary P(class 1), written out independently."""
    confidence = np.where(p >= 0.5, p, 1.0 - p)
    predicted = (p > 0.5).astype(int)  # argmax of [1 - p, p] picks class 0 on ties
    return confidence, (predicted == y).astype(float)


def brute_kce(v: np.ndarray, o: np.ndarray) -> float:
    r = v - o
    kernel = np.exp(-np.abs(v[:, None] - v[None, :]))
    return float(np.sqrt(np.sum(np.outer(r, r) * kernel))) / v.size


def lp_smce(v: np.ndarray, o: np.ndarray) -> float:
    """smCE as Theorem 7.14's LP: max sum w_i r_i, |w_i| <= 1, |w_i - w_j| <= |v_i - v_j|."""
    order = np.argsort(v)
    v, r = v[order], (v - o)[order]
    n = v.size
    if n == 1:
        return abs(r[0])
    k = np.arange(n - 1)
    step = sparse.csr_array(
        (np.r_[-np.ones(n - 1), np.ones(n - 1)], (np.r_[k, k], np.r_[k, k + 1])), shape=(n - 1, n)
    )
    gaps = np.diff(v)
    result = linprog(
        -r,
        A_ub=sparse.vstack([step, -step]),
        b_ub=np.r_[gaps, gaps],
        bounds=(-1, 1),
        method="highs",
    )
    return -result.fun / n


def brute_binned_ece(v: np.ndarray, o: np.ndarray, n_bins: int) -> float:
    """Equal-width bins (e_{b-1}, e_b], the first closed, by explicit membership tests."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    total = 0.0
    for b in range(n_bins):
        inside = (v > edges[b]) & (v <= edges[b + 1])
        if b == 0:
            inside |= v == edges[0]
        if inside.any():
            total += abs(np.sum(v[inside] - o[inside]))
    return total / v.size


def shift_grid_average(v: np.ndarray, o: np.ndarray, width: float, shifts: int) -> float:
    """E_u[binnedECE] over bins [(k - u) w, (k + 1 - u) w), midpoint rule over u."""
    total = 0.0
    for u in (np.arange(shifts) + 0.5) / shifts:
        index = np.floor(v / width + u).astype(int)
        total += np.abs(np.bincount(index, weights=v - o)).sum()
    return total / (shifts * v.size)


@pytest.mark.parametrize("beta", TEMPERATURES)
def test_kce_equals_the_brute_force_double_sum(beta: float) -> None:
    y, p = tempered_family(beta)
    assert laplace_kernel_calibration_error(y, p) == pytest.approx(
        brute_kce(*top_label(y, p)), abs=1e-9
    )


@pytest.mark.parametrize("beta", TEMPERATURES)
def test_smce_equals_the_linear_program(beta: float) -> None:
    y, p = tempered_family(beta)
    assert smooth_calibration_error(y, p) == pytest.approx(lp_smce(*top_label(y, p)), abs=1e-4)


@pytest.mark.parametrize("beta", TEMPERATURES)
def test_smooth_ece_matches_relplot(beta: float) -> None:
    y, p = tempered_family(beta)
    confidence, correct = top_label(y, p)
    assert smooth_ece(y, p) == pytest.approx(relplot.smECE(confidence, correct), abs=1e-9)
    assert smooth_ece(y, p, bandwidth=0.05) == pytest.approx(
        relplot.smECE_sigma(confidence, correct, 0.05), abs=1e-9
    )


@pytest.mark.parametrize(("grid", "by_dct"), [(1001, True), (1281, True), (1707, False),
                                            (1139, False), (1464, False), (3417, False)])
def test_smooth_ece_matches_relplot_on_either_convolution_path(grid: int, by_dct: bool) -> None:
    """Odd grids whose DCT length 2 (grid - 1) has a large prime factor (1707: 4 x 853)
    are convolved through the real FFT instead, as even grids are; both match relplot."""
    from calibcore.metrics.kernel_smoothing import _by_dct, grid_size

    bandwidth = 20.0 / (2 * grid - 1.75)  # round(20 / bandwidth) = 2 grid - 2
    assert grid_size(bandwidth) == grid and _by_dct(grid) == by_dct
    y, p = tempered_family(2.0)
    confidence, correct = top_label(y, p)
    assert smooth_ece(y, p, bandwidth=bandwidth) == pytest.approx(
        relplot.smECE_sigma(confidence, correct, bandwidth), rel=1e-12, abs=0)


@pytest.mark.parametrize("beta", TEMPERATURES)
def test_ece_equals_the_brute_force_binned_ece(beta: float) -> None:
    y, p = tempered_family(beta)
    expected = brute_binned_ece(*top_label(y, p), n_bins=15)
    assert metrics.expected_calibration_error(y, p) == pytest.approx(expected, abs=1e-9)
    assert binned_ece_plus_width(y, p, n_bins=15) == pytest.approx(expected + 1 / 15, abs=1e-9)


@pytest.mark.parametrize("width", [1.0, 0.25, 0.03125, 0.004])
def test_shift_average_is_the_exact_expectation(width: float) -> None:
    y, p = tempered_family(2.0, n=300)
    v, o = top_label(y, p)
    order = np.argsort(v)
    exact = shifted_interval_rows(v[order], (v - o)[order], np.ones((1, v.size)), width)[0]
    assert exact == pytest.approx(shift_grid_average(v, o, width, shifts=4000), abs=2e-4)


def test_interval_calibration_error_is_the_minimum_over_halving_widths() -> None:
    y, p = tempered_family(0.5, n=500)
    v, o = top_label(y, p)
    widths = [2.0**-k for k in range(10)]
    expected = min(shift_grid_average(v, o, w, shifts=2000) + w for w in widths)
    assert interval_calibration_error(y, p) == pytest.approx(expected, abs=2e-4)


def test_interval_calibration_error_agrees_with_relplot_in_expectation() -> None:
    y, p = tempered_family(2.0)
    confidence, correct = top_label(y, p)
    np.random.seed(0)  # noqa: NPY002 (relplot's estimator draws from the legacy global RNG)
    draws = [relplot.metrics.intCE_rand(confidence, correct) for _ in range(10)]
    assert interval_calibration_error(y, p) == pytest.approx(np.mean(draws), abs=3e-3)


def test_interval_calibration_error_is_deterministic() -> None:
    y, p = tempered_family(0.5)
    assert interval_calibration_error(y, p) == interval_calibration_error(y, p)


@pytest.mark.parametrize(
    ("measure", "ceiling"),
    [
        (laplace_kernel_calibration_error, 0.02),
        (smooth_calibration_error, 0.02),
        (smooth_ece, 0.04),
        (interval_calibration_error, 0.08),
    ],
)
def test_consistent_measures_grow_away_from_calibration(measure, ceiling: float) -> None:
    values = {beta: measure(*tempered_family(beta)) for beta in TEMPERATURES}
    assert values[1.0] < ceiling
    assert values[0.5] > 2 * values[1.0]
    assert values[2.0] > 2 * values[1.0]


def test_classwise_view_averages_one_vs_rest_problems() -> None:
    rng = np.random.default_rng(3)
    proba = rng.dirichlet(np.ones(4), size=300)
    labels = np.array([rng.choice(4, p=row) for row in proba])
    for measure in (laplace_kernel_calibration_error, smooth_calibration_error, smooth_ece):
        per_class = [
            measure((labels == k).astype(int), proba[:, k], view="positive") for k in range(4)
        ]
        assert measure(labels, proba, view="classwise") == pytest.approx(np.mean(per_class))


def test_multiclass_top_label_kce_matches_brute_force() -> None:
    rng = np.random.default_rng(4)
    proba = rng.dirichlet(np.ones(5), size=400)
    labels = rng.integers(0, 5, size=400)
    confidence = proba.max(axis=1)
    correct = (proba.argmax(axis=1) == labels).astype(float)
    assert laplace_kernel_calibration_error(labels, proba) == pytest.approx(
        brute_kce(confidence, correct), abs=1e-12
    )


def test_a_single_row_and_ties_are_handled() -> None:
    assert smooth_calibration_error([1], [0.3], view="positive") == pytest.approx(0.7)
    assert laplace_kernel_calibration_error([1], [0.3], view="positive") == pytest.approx(0.7)
    tied = np.array([0.2] * 5 + [0.7] * 5)
    y = np.array([0, 0, 1, 0, 0, 1, 1, 0, 1, 1])
    v, o = tied, y.astype(float)
    assert smooth_calibration_error(y, tied, view="positive") == pytest.approx(lp_smce(v, o))
    assert laplace_kernel_calibration_error(y, tied, view="positive") == pytest.approx(
        brute_kce(v, o)
    )


def test_perfect_predictions_have_zero_error() -> None:
    y = np.array([0, 1, 1, 0])
    p = y.astype(float)
    for measure in (laplace_kernel_calibration_error, smooth_calibration_error):
        assert measure(y, p) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize(
    "call",
    [
        lambda y, p: interval_calibration_error(y, p, precision=0.0),
        lambda y, p: smooth_ece(y, p, bandwidth=-1.0),
        lambda y, p: binned_ece_plus_width(y, p, n_bins=0),
        lambda y, p: laplace_kernel_calibration_error(y, p, view="sideways"),
        lambda y, p: smooth_calibration_error(y, [0.2, 1.3, 0.5]),
    ],
)
def test_bad_input_is_rejected_with_a_calibration_error(call) -> None:
    with pytest.raises(CalibrationInputError):
        call([0, 1, 1], [0.2, 0.8, 0.5])


samples = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 20).map(lambda k: k / 20), min_size=n, max_size=n),
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
    )
)


@settings(max_examples=60, deadline=None)
@given(samples)
def test_smce_solver_equals_the_lp_on_small_samples(sample) -> None:
    scores, labels = map(np.asarray, sample)
    expected = lp_smce(scores.astype(float), labels.astype(float))
    assert smooth_calibration_error(labels, scores, view="positive") == pytest.approx(
        expected, abs=1e-7
    )


@settings(max_examples=60, deadline=None)
@given(samples)
def test_measures_respect_the_paper_bounds(sample) -> None:
    scores, labels = map(np.asarray, sample)
    scores = scores.astype(float)
    residual = scores - labels
    smce = smooth_calibration_error(labels, scores, view="positive")
    kce = laplace_kernel_calibration_error(labels, scores, view="positive")
    # |w| = 1 constant is feasible, and no w beats |w_i| = 1 everywhere.
    assert abs(residual.mean()) - 1e-9 <= smce <= np.abs(residual).mean() + 1e-9
    assert 0.0 <= kce <= np.abs(residual).mean() + 1e-9
    # smCE <= lower distance <= upper distance <= intCE, binnedECE + width
    # (Błasiok et al. 2023, §5-7).
    assert smce <= interval_calibration_error(labels, scores, view="positive") + 1e-9
    assert smce <= binned_ece_plus_width(labels, scores, view="positive", n_bins=7) + 1e-9


@settings(max_examples=30, deadline=None)
@given(samples, st.randoms(use_true_random=False))
def test_measures_do_not_depend_on_row_order(sample, random) -> None:
    scores, labels = map(np.asarray, sample)
    order = np.arange(scores.size)
    random.shuffle(order)
    for measure in (
        laplace_kernel_calibration_error,
        smooth_calibration_error,
        interval_calibration_error,
        smooth_ece,
    ):
        assert measure(labels[order], scores[order], view="positive") == pytest.approx(
            measure(labels, scores, view="positive"), abs=1e-12
        )


def _numpy_shifted_interval_rows(scores: np.ndarray, residuals: np.ndarray,
                                 weights: np.ndarray, width: float) -> np.ndarray:
    """The walk written with NumPy: a stable argsort of the concatenated runs, the gathered
    signed steps, their running sum and the gaps (what the compiled walk replaces)."""
    merged = np.concatenate([scores - width, scores])
    order = np.argsort(merged, kind="stable")
    weighted = weights * residuals
    steps = np.concatenate([weighted, -weighted], axis=1)[:, order]
    window = np.abs(np.cumsum(steps, axis=1))
    lengths = np.append(np.diff(merged[order]), 0.0)
    return np.einsum("bi,i->b", window, lengths) / (width * weights.sum(axis=1))


@pytest.mark.parametrize(("n", "rows", "decimals"), [(1, 1, 3), (7, 3, 1), (2_000, 5, 2),
                                                     (20_000, 1, 6), (3_000, 20, 12)])
def test_compiled_walk_gives_numpys_values(n: int, rows: int, decimals: int) -> None:
    # tied scores (rounded), shifted points landing on scores (widths 2^-k on a grid of
    # 1/10^decimals), count weights with zeros: every term is NumPy's, only the order of
    # the final sum differs
    rng = np.random.default_rng(n + rows)
    scores = np.sort(rng.uniform(size=n).round(decimals))
    residuals = scores - (rng.uniform(size=n) < scores)
    weights = (np.ones((rows, n)) if rows == 1
               else rng.poisson(1.0, size=(rows, n)).astype(np.float64))
    for width in (1.0, 0.5, 0.1, 1 / 64, 2.0**-10):
        ours = shifted_interval_rows(scores, residuals, weights, width)
        reference = _numpy_shifted_interval_rows(scores, residuals, weights, width)
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-15)


@settings(max_examples=200)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 2000), rows=st.integers(1, 4),
       negative_zero=st.booleans())
def test_compiled_prefix_sums_are_numpys(seed: int, n: int, rows: int,
                                         negative_zero: bool) -> None:
    # the grid splitter's running sums of values, then weights, and of each times the
    # score, written in one compiled pass: numpy's cumsum of the stacked rows to the bit
    from calibcore.metrics._prefix_sums import prefix_sums

    rng = np.random.default_rng(seed)
    scores = np.sort(rng.random(n))
    values = rng.normal(size=(rows, n)) * rng.poisson(2.0, size=(rows, n))
    weights = rng.poisson(1.5, size=(rows, n)).astype(np.float64)
    if negative_zero:
        values[:, 0] = -0.0
    stacked = np.concatenate([values, weights])
    zeros = np.zeros((2 * rows, 1))
    sums, moments = prefix_sums(scores, values, weights)
    assert sums.tobytes() == np.concatenate([zeros, np.cumsum(stacked, axis=1)], axis=1).tobytes()
    assert moments.tobytes() == np.concatenate(
        [zeros, np.cumsum(stacked * scores, axis=1)], axis=1).tobytes()
