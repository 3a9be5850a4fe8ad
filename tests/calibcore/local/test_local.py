"""LCE / MLCE (Luo et al. 2022, eqs. 4-5, Lemma 1) against brute-force references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from calibcore.exceptions import CalibrationInputError
from calibcore.local import (
    DEFAULT_GAMMAS,
    local_calibration,
    local_calibration_error,
    maximum_local_calibration_error,
    mean_local_calibration_error,
    mlce_curve,
    signed_local_calibration_error,
    summarize_bins,
)
from calibcore.local._laplace_sums import kernel_sums
from calibcore.metrics import expected_calibration_error, maximum_calibration_error

# ---------------------------------------------------------------- references


def reference_parts(
    y_true: NDArray[np.intp], y_prob: NDArray[np.float64], n_bins: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """Top-label confidence, correctness and right-closed bin of every row, by hand."""
    proba = np.column_stack([1 - y_prob, y_prob]) if y_prob.ndim == 1 else y_prob
    confidence = proba.max(axis=1)
    correct = (proba.argmax(axis=1) == y_true).astype(float)
    bins = np.array([max(0, int(np.ceil(c * n_bins)) - 1) for c in confidence])
    return confidence, correct, bins


def reference_signed_lce(
    embedding: NDArray[np.float64], y_true: NDArray[np.intp], y_prob: NDArray[np.float64],
    gamma: float, n_bins: int = 15,
) -> NDArray[np.float64]:
    """Eq. 4 without the absolute value, one row at a time."""
    confidence, correct, bins = reference_parts(y_true, y_prob, n_bins)
    d = embedding.shape[1]
    out = np.empty(len(y_true))
    for i in range(len(y_true)):
        same = bins == bins[i]
        kernel = np.exp(-np.abs(embedding[same] - embedding[i]).sum(axis=1) / (d * gamma))
        out[i] = np.sum(kernel * (confidence[same] - correct[same])) / kernel.sum()
    return out


def random_problem(
    rng: np.random.Generator, n: int, d: int, n_classes: int = 3
) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.float64]]:
    embedding = rng.normal(size=(n, d))
    embedding[::9] = embedding[n // 2]  # exact duplicates
    embedding[::7, 0] = embedding[-1, 0]  # ties along one coordinate
    y_prob = rng.dirichlet(np.full(n_classes, 0.6), size=n)
    y_true = rng.integers(0, n_classes, size=n)
    return embedding, y_true, y_prob


# ---------------------------------------------------------------- exactness


@pytest.mark.parametrize("d", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("gamma", [1e-3, 0.05, 0.2, 3.0, 1e2])
def test_lce_matches_brute_force(rng: np.random.Generator, d: int, gamma: float) -> None:
    embedding, y_true, y_prob = random_problem(rng, 400, d)
    expected = reference_signed_lce(embedding, y_true, y_prob, gamma)
    signed = signed_local_calibration_error(embedding, y_true, y_prob, gamma=gamma)
    np.testing.assert_allclose(signed, expected, rtol=0, atol=1e-9)
    absolute = local_calibration_error(embedding, y_true, y_prob, gamma=gamma)
    np.testing.assert_allclose(absolute, np.abs(expected), rtol=0, atol=1e-9)


def test_binary_input_and_other_bin_counts(rng: np.random.Generator) -> None:
    embedding = rng.uniform(-5, 5, size=(300, 2)) * [1.0, 30.0]  # unequal scales
    p = rng.uniform(size=300)
    p[:5] = [0.0, 1.0, 0.5, 0.2, 0.8]  # bin edges
    y = (rng.uniform(size=300) < p).astype(int)
    for n_bins in (1, 5, 10):
        expected = reference_signed_lce(embedding, y, p, 0.3, n_bins)
        got = signed_local_calibration_error(embedding, y, p, gamma=0.3, n_bins=n_bins)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_kernel_sums_bipartite_matches_brute_force(rng: np.random.Generator, d: int) -> None:
    targets = rng.normal(size=(150, d)) * 2
    sources = rng.normal(size=(220, d)) * 2
    sources[:10] = targets[:10]  # shared points
    weights = rng.normal(size=(220, 3))
    distance = np.abs(targets[:, None, :] - sources[None, :, :]).sum(axis=2)
    expected = np.exp(-distance) @ weights
    [got] = kernel_sums([(targets, sources, weights)])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_far_apart_points_do_not_overflow(rng: np.random.Generator) -> None:
    # Spread 1e4 at gamma 1e-3: every cross-point kernel underflows; the row alone decides.
    embedding = rng.uniform(0, 1e4, size=(500, 2))
    y_prob = rng.uniform(0.5, 1, size=500)
    y_true = rng.integers(0, 2, size=500)
    confidence, correct, _ = reference_parts(y_true, y_prob, 15)
    lce = local_calibration_error(embedding, y_true, y_prob, gamma=1e-3)
    np.testing.assert_allclose(lce, np.abs(confidence - correct), atol=1e-12)


# ---------------------------------------------------------------- invariants


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 80),
    d=st.integers(1, 4),
    gamma=st.floats(1e-3, 1e2),
)
def test_row_order_translation_and_sign(seed: int, n: int, d: int, gamma: float) -> None:
    rng = np.random.default_rng(seed)
    embedding, y_true, y_prob = random_problem(rng, n, d)
    result = local_calibration(embedding, y_true, y_prob, gamma=gamma)
    order = rng.permutation(n)
    shuffled = local_calibration(embedding[order], y_true[order], y_prob[order], gamma=gamma)
    np.testing.assert_allclose(shuffled.signed_lce, result.signed_lce[order], atol=1e-12)
    moved = local_calibration(embedding + rng.normal(size=d) * 100, y_true, y_prob, gamma=gamma)
    np.testing.assert_allclose(moved.signed_lce, result.signed_lce, atol=1e-9)
    np.testing.assert_array_equal(result.lce, np.abs(result.signed_lce))
    assert np.all((result.lce >= 0) & (result.lce <= 1 + 1e-12))
    assert result.mlce == pytest.approx(result.lce.max())
    assert result.mean_lce == pytest.approx(result.lce.mean())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60))
def test_single_point_bins_and_tiny_gamma_give_own_error(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    embedding = rng.permutation(n)[:, None].astype(float)  # distinct points, spacing >= 1
    y_prob = rng.uniform(size=n)
    y_true = rng.integers(0, 2, size=n)
    confidence, correct, _ = reference_parts(y_true, y_prob, 15)
    lce = local_calibration_error(embedding, y_true, y_prob, gamma=1e-4)
    np.testing.assert_allclose(lce, np.abs(confidence - correct), atol=1e-12)


# ---------------------------------------------------------------- gamma -> infinity (Lemma 1)


def test_large_gamma_gives_each_row_its_bin_gap(rng: np.random.Generator) -> None:
    embedding, y_true, y_prob = random_problem(rng, 600, 2, n_classes=4)
    confidence, correct, bins = reference_parts(y_true, y_prob, 15)
    gaps = {b: np.mean(confidence[bins == b] - correct[bins == b]) for b in np.unique(bins)}
    signed = signed_local_calibration_error(embedding, y_true, y_prob, gamma=1e9)
    np.testing.assert_allclose(signed, [gaps[b] for b in bins], atol=1e-8)


def test_mlce_curve_tends_to_mce_and_mean_lce_to_ece(rng: np.random.Generator) -> None:
    embedding, y_true, y_prob = random_problem(rng, 500, 3, n_classes=5)
    curve = mlce_curve(embedding, y_true, y_prob, gammas=[0.01, 1.0, 1e3, 1e6, 1e9])
    mce = maximum_calibration_error(y_true, y_prob)
    ece = expected_calibration_error(y_true, y_prob)
    assert curve.mce == pytest.approx(mce, abs=1e-12)
    assert curve.ece == pytest.approx(ece, abs=1e-12)
    errors = np.abs(curve.mlce - mce)
    assert errors[-1] < 1e-8 and np.all(np.diff(errors[1:]) <= 0)
    assert abs(curve.mean_lce[-1] - ece) < 1e-8
    # Each point of the curve is the MLCE / mean LCE at that gamma.
    assert curve.mlce[1] == pytest.approx(
        maximum_local_calibration_error(embedding, y_true, y_prob, gamma=1.0), abs=1e-12)
    assert curve.mean_lce[0] == pytest.approx(
        mean_local_calibration_error(embedding, y_true, y_prob, gamma=0.01), abs=1e-12)


def test_default_gamma_grid(rng: np.random.Generator) -> None:
    embedding, y_true, y_prob = random_problem(rng, 200, 2)
    curve = mlce_curve(embedding, y_true, y_prob)
    assert curve.gammas[0] == pytest.approx(1e-3) and curve.gammas[-1] == pytest.approx(1e2)
    np.testing.assert_allclose(np.diff(np.log10(curve.gammas)), 0.25)
    np.testing.assert_array_equal(curve.gammas, DEFAULT_GAMMAS)
    # Small neighbourhoods see individual errors: MLCE >= the MCE (Luo et al. 2022, Figure 1).
    assert curve.mlce[0] >= curve.mce and curve.mlce[0] > 0.9


# ---------------------------------------------------------------- the paper's Figure 2 example


def test_locally_miscalibrated_bin_that_looks_calibrated_globally() -> None:
    """One bin, confidence 0.75 everywhere: right 95% of the time on the left half of the
    map and 55% on the right. The bin's |conf - acc| is ~0 but the LCE is ~0.2."""
    rng = np.random.default_rng(7)
    n = 4000
    embedding = rng.uniform(-1, 1, size=(n, 2))
    left = embedding[:, 0] < 0
    correct = rng.uniform(size=n) < np.where(left, 0.95, 0.55)
    y_prob = np.full(n, 0.75)
    y_true = np.where(correct, 1, 0)
    result = local_calibration(embedding, y_true, y_prob, gamma=0.05)
    summary = summarize_bins(result)
    b = int(result.bin_index[0])
    assert summary.gap[b] < 0.03
    assert summary.mean_lce[b] > 0.15
    interior = np.abs(embedding[:, 0]) > 0.3
    under, over = result.signed_lce[left & interior], result.signed_lce[~left & interior]
    assert np.mean(under < 0) > 0.99 and under.mean() == pytest.approx(-0.2, abs=0.03)
    assert np.mean(over > 0) > 0.99 and over.mean() == pytest.approx(0.2, abs=0.03)
    cdf = summary.distribution(b)
    # Nearly all of the CDF lies to the right of the bin's global error (Figure 2, top).
    assert np.mean(cdf.values > summary.gap[b]) > 0.9


# ---------------------------------------------------------------- per-bin summaries


def test_bin_summary_against_brute_force(rng: np.random.Generator) -> None:
    embedding, y_true, y_prob = random_problem(rng, 700, 2, n_classes=3)
    result = local_calibration(embedding, y_true, y_prob, gamma=0.2)
    summary = summarize_bins(result)
    confidence, correct, bins = reference_parts(y_true, y_prob, 15)
    assert summary.count.sum() == 700 and summary.offsets[-1] == 700
    for b in range(15):
        members = bins == b
        assert summary.count[b] == members.sum()
        if not members.any():
            assert np.isnan(summary.gap[b]) and np.isnan(summary.mean_lce[b])
            assert summary.distribution(b).values.size == 0
            continue
        assert summary.gap[b] == pytest.approx(abs(confidence[members].mean()
                                                   - correct[members].mean()))
        assert summary.mean_lce[b] == pytest.approx(result.lce[members].mean())
        assert summary.max_lce[b] == pytest.approx(result.lce[members].max())
        cdf = summary.distribution(b)
        np.testing.assert_array_equal(cdf.values, np.sort(result.lce[members]))
        assert cdf.cumulative[-1] == 1.0 and np.all(np.diff(cdf.cumulative) > 0)
    assert summary.gap[summary.worst_bin] == np.nanmax(summary.gap)
    assert summary.gap[summary.best_bin] == np.nanmin(summary.gap)
    with pytest.raises(CalibrationInputError):
        summary.distribution(15)


# ---------------------------------------------------------------- sampled approximation


def test_sampled_equals_exact_when_bins_fit_the_sample(rng: np.random.Generator) -> None:
    embedding, y_true, y_prob = random_problem(rng, 300, 5)
    exact = local_calibration(embedding, y_true, y_prob, gamma=0.4)
    sampled = local_calibration(embedding, y_true, y_prob, gamma=0.4,
                                approximation="sampled", n_sources=300)
    assert exact.exact and not sampled.exact
    np.testing.assert_allclose(sampled.signed_lce, exact.signed_lce, atol=1e-12)


def test_sampled_approximation_is_close_and_seeded() -> None:
    rng = np.random.default_rng(3)
    n = 6000
    embedding = rng.uniform(-1, 1, size=(n, 4))
    y_prob = rng.uniform(0.9, 0.95, size=n)  # one bin
    y_true = (rng.uniform(size=n) < 0.9 - 0.3 * (embedding[:, 0] > 0)).astype(int)
    exact = local_calibration(embedding, y_true, y_prob, gamma=0.4)
    first = local_calibration(embedding, y_true, y_prob, gamma=0.4, approximation="sampled",
                              n_sources=1500, random_state=1)
    again = local_calibration(embedding, y_true, y_prob, gamma=0.4, approximation="sampled",
                              n_sources=1500, random_state=1)
    np.testing.assert_array_equal(first.signed_lce, again.signed_lce)
    assert np.abs(first.signed_lce - exact.signed_lce).max() < 0.05
    assert abs(first.mean_lce - exact.mean_lce) < 0.01


def test_sampled_rows_always_count_themselves(rng: np.random.Generator) -> None:
    """Isolated rows (every other kernel ~0) keep their own error, sampled or not."""
    embedding = rng.permutation(500)[:, None] * 100.0
    y_prob = rng.uniform(0.9, 0.93, size=500)
    y_true = rng.integers(0, 2, size=500)
    confidence, correct, _ = reference_parts(y_true, y_prob, 15)
    sampled = local_calibration(embedding, y_true, y_prob, gamma=0.1,
                                approximation="sampled", n_sources=50)
    np.testing.assert_allclose(sampled.lce, np.abs(confidence - correct), atol=1e-12)


# ---------------------------------------------------------------- input errors


def test_bad_inputs_raise_actionable_errors(rng: np.random.Generator) -> None:
    embedding, y_true, y_prob = random_problem(rng, 20, 2)
    with pytest.raises(CalibrationInputError, match="19 rows"):
        local_calibration_error(embedding[:19], y_true, y_prob, gamma=0.2)
    broken = embedding.copy()
    broken[[3, 5]] = np.nan
    with pytest.raises(CalibrationInputError, match="rows 3, 5") as info:
        local_calibration_error(broken, y_true, y_prob, gamma=0.2)
    assert info.value.rows == [3, 5]
    for gamma in (0.0, -1.0, np.inf, "wide"):
        with pytest.raises(CalibrationInputError, match="gamma"):
            local_calibration_error(embedding, y_true, y_prob, gamma=gamma)  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="approximation"):
        local_calibration(embedding, y_true, y_prob, gamma=0.2, approximation="fast")  # type: ignore[arg-type]
    with pytest.raises(CalibrationInputError, match="gammas"):
        mlce_curve(embedding, y_true, y_prob, gammas=[])
    with pytest.raises(CalibrationInputError, match="too small"):
        local_calibration_error(embedding * 1e300, y_true, y_prob, gamma=1e-300)


def test_progress_is_reported(rng: np.random.Generator) -> None:
    embedding, y_true, y_prob = random_problem(rng, 200, 2)
    seen: list[float] = []
    mlce_curve(embedding, y_true, y_prob, gammas=[0.1, 1.0],
               progress=lambda fraction, message: seen.append(fraction))
    assert seen and seen[-1] == 1.0 and np.all(np.diff(seen) > 0)
