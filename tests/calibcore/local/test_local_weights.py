"""Row weights in the local calibration error (Luo et al. 2022, eq. 4 with the kernel
weights multiplied by the row weights): integer weights give what the rows repeated by
their weights give, unit weights give the unweighted numbers bit for bit, and a tiny
example computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibcore.exceptions import CalibrationInputError
from calibcore.local import (
    local_calibration,
    local_calibration_error,
    maximum_local_calibration_error,
    mean_local_calibration_error,
    mlce_curve,
    signed_local_calibration_error,
    summarize_bins,
)

GAMMAS = [0.05, 0.3, 4.0]


def _data(n: int, dimension: int, seed: int) -> tuple[np.ndarray, ...]:
    """An embedding, binary labels and P(class 1) that depends on the first coordinate."""
    rng = np.random.default_rng(seed)
    coordinates = rng.normal(size=(n, dimension))
    proba = 1.0 / (1.0 + np.exp(-1.5 * coordinates[:, 0]))
    labels = (rng.random(n) < 0.8 * proba + 0.1).astype(int)
    weights = rng.integers(0, 4, n).astype(float)
    weights[:2] = 1.0
    return coordinates, labels, proba, weights


@pytest.mark.parametrize("dimension", [2, 5])  # the sweep (d <= 3) and the direct sums
def test_integer_weights_equal_the_rows_repeated(dimension: int) -> None:
    coordinates, labels, proba, weights = _data(300, dimension, seed=dimension)
    repeat = weights.astype(int)
    first = np.concatenate([[0], np.cumsum(repeat)[:-1]])  # first copy of each kept row
    kept = repeat > 0
    for gamma in GAMMAS:
        ours = local_calibration(coordinates, labels, proba, gamma=gamma, sample_weight=weights)
        theirs = local_calibration(np.repeat(coordinates, repeat, axis=0),
                                   np.repeat(labels, repeat), np.repeat(proba, repeat),
                                   gamma=gamma)
        np.testing.assert_allclose(ours.signed_lce[kept], theirs.signed_lce[first[kept]],
                                   rtol=0, atol=1e-12)
        assert ours.mlce == pytest.approx(theirs.mlce, abs=1e-12)
        assert ours.mean_lce == pytest.approx(theirs.mean_lce, abs=1e-12)
        summary, repeated = summarize_bins(ours), summarize_bins(theirs)
        assert summary.weight is not None and repeated.weight is None
        np.testing.assert_allclose(summary.weight, repeated.count, rtol=0, atol=1e-12)
        for name in ("confidence", "accuracy", "gap", "mean_lce", "mean_signed_lce",
                     "max_lce"):
            np.testing.assert_allclose(getattr(summary, name), getattr(repeated, name),
                                       rtol=0, atol=1e-12, err_msg=name)
        for b in np.flatnonzero(repeated.count):
            mine, reference = summary.distribution(int(b)), repeated.distribution(int(b))
            # each value repeated by its weight is the repeated rows' sorted LCE, and the
            # weighted CDF at it is their CDF at its last copy
            assert summary.sorted_weight is not None
            w = summary.sorted_weight[summary.offsets[b]:summary.offsets[b + 1]].astype(int)
            np.testing.assert_allclose(np.repeat(mine.values, w), reference.values,
                                       rtol=0, atol=1e-12)
            last = np.cumsum(w)[w > 0] - 1
            np.testing.assert_allclose(mine.cumulative[w > 0], reference.cumulative[last],
                                       rtol=0, atol=1e-12)
    curve = mlce_curve(coordinates, labels, proba, gammas=GAMMAS, sample_weight=weights)
    reference_curve = mlce_curve(np.repeat(coordinates, repeat, axis=0),
                                 np.repeat(labels, repeat), np.repeat(proba, repeat),
                                 gammas=GAMMAS)
    np.testing.assert_allclose(curve.mlce, reference_curve.mlce, rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve.mean_lce, reference_curve.mean_lce, rtol=0, atol=1e-12)
    assert curve.mce == pytest.approx(reference_curve.mce, abs=1e-12)
    assert curve.ece == pytest.approx(reference_curve.ece, abs=1e-12)


def test_unit_weights_give_the_unweighted_numbers_bit_for_bit() -> None:
    coordinates, labels, proba, _ = _data(400, 2, seed=11)
    ones = np.ones(labels.size)
    plain = local_calibration(coordinates, labels, proba, gamma=0.2)
    weighted = local_calibration(coordinates, labels, proba, gamma=0.2, sample_weight=ones)
    assert np.array_equal(plain.signed_lce, weighted.signed_lce)
    assert plain.mlce == weighted.mlce and plain.mean_lce == weighted.mean_lce
    a, b = summarize_bins(plain), summarize_bins(weighted)
    for name in ("confidence", "accuracy", "gap", "mean_lce", "mean_signed_lce", "max_lce",
                 "sorted_lce"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    for bin_index in np.flatnonzero(a.count):
        assert np.array_equal(a.distribution(int(bin_index)).cumulative,
                              b.distribution(int(bin_index)).cumulative)
    curves = [mlce_curve(coordinates, labels, proba, gammas=GAMMAS, sample_weight=w)
              for w in (None, ones)]
    assert np.array_equal(curves[0].mlce, curves[1].mlce)
    assert np.array_equal(curves[0].mean_lce, curves[1].mean_lce)
    assert (curves[0].mce, curves[0].ece) == (curves[1].mce, curves[1].ece)
    for function in (local_calibration_error, signed_local_calibration_error):
        assert np.array_equal(function(coordinates, labels, proba, gamma=0.2),
                              function(coordinates, labels, proba, gamma=0.2,
                                       sample_weight=ones))
    for scalar in (maximum_local_calibration_error, mean_local_calibration_error):
        assert scalar(coordinates, labels, proba, gamma=0.2) == scalar(
            coordinates, labels, proba, gamma=0.2, sample_weight=ones)


def test_a_tiny_weighted_lce_computed_by_hand() -> None:
    # Four rows in one confidence bin (0.8 < p <= 0.8667 of 15 bins), on a line; d = 1.
    x = np.array([0.0, 1.0, 3.0, 10.0])
    proba = np.array([0.82, 0.84, 0.85, 0.83])
    labels = np.array([1, 0, 1, 1])
    weights = np.array([2.0, 0.5, 1.0, 0.0])
    gamma = 0.5  # kernel exp(-|dx| / (1 * 0.5)) = exp(-2 |dx|)
    residual = proba - labels  # conf - correct for P(class 1) > 0.5
    expected = []
    for i in range(4):
        kernel = [weights[j] * math.exp(-2.0 * abs(x[i] - x[j])) for j in range(4)]
        expected.append(sum(k * r for k, r in zip(kernel, residual, strict=True)) / sum(kernel))
    result = local_calibration(x, labels, proba, gamma=gamma, sample_weight=weights)
    np.testing.assert_allclose(result.signed_lce, expected, rtol=1e-13, atol=0)
    # Row 2 by hand: (2 e^-6 (-0.18) + 0.5 e^-4 (0.84) + 1 (-0.15)) / (2 e^-6 + 0.5 e^-4 + 1)
    row2 = ((2 * math.exp(-6) * -0.18 + 0.5 * math.exp(-4) * 0.84 - 0.15)
            / (2 * math.exp(-6) + 0.5 * math.exp(-4) + 1.0))
    assert result.signed_lce[2] == pytest.approx(row2, abs=1e-15)
    # The row of weight 0 is estimated at its point but counts in no summary: the MLCE
    # is over rows 0-2 and the mean LCE is weighted 2 : 0.5 : 1.
    assert result.signed_lce[3] == pytest.approx(residual[2], abs=0.01)  # row 2 is nearest
    assert result.mlce == pytest.approx(abs(np.array(expected[:3])).max(), abs=1e-15)
    assert result.mean_lce == pytest.approx(
        (2 * abs(expected[0]) + 0.5 * abs(expected[1]) + abs(expected[2])) / 3.5, abs=1e-15)
    summary = summarize_bins(result)
    b = int(result.bin_index[0])
    assert summary.weight is not None and summary.weight[b] == 3.5
    assert summary.count[b] == 4
    assert summary.gap[b] == pytest.approx(
        abs((2 * residual[0] + 0.5 * residual[1] + residual[2]) / 3.5), abs=1e-15)
    # weights of 0 on every row but one: each other row's LCE is that row's residual
    alone = local_calibration(x[:3], labels[:3], proba[:3], gamma=gamma,
                              sample_weight=[0.0, 0.0, 3.0])
    np.testing.assert_allclose(alone.signed_lce, residual[2], rtol=1e-12)


def test_a_bin_of_zero_weight_has_no_lce_and_no_gap() -> None:
    x = np.array([0.0, 1.0, 2.0])
    proba = np.array([0.95, 0.97, 0.6])  # rows 0-1 in the top bin, row 2 lower
    labels = np.array([1, 0, 1])
    result = local_calibration(x, labels, proba, gamma=1.0, sample_weight=[0.0, 0.0, 1.0])
    assert np.isnan(result.signed_lce[:2]).all() and result.signed_lce[2] == pytest.approx(-0.4)
    assert result.mlce == pytest.approx(0.4) and result.mean_lce == pytest.approx(0.4)
    curve = mlce_curve(x, labels, proba, gammas=[1.0], sample_weight=[0.0, 0.0, 1.0])
    assert curve.mce == pytest.approx(0.4) and curve.ece == pytest.approx(0.4)


def test_the_sampled_approximation_takes_the_weights() -> None:
    coordinates, labels, proba, weights = _data(600, 4, seed=3)
    exact = local_calibration(coordinates, labels, proba, gamma=0.3, sample_weight=weights)
    # n_sources at least each bin's size: the "sample" is every row, so the sums are exact
    everything = local_calibration(coordinates, labels, proba, gamma=0.3,
                                   sample_weight=weights, approximation="sampled",
                                   n_sources=600)
    np.testing.assert_allclose(everything.signed_lce, exact.signed_lce, atol=1e-12)
    sampled = local_calibration(coordinates, labels, proba, gamma=0.3, sample_weight=weights,
                                approximation="sampled", n_sources=40)
    assert not sampled.exact
    assert sampled.mean_lce == pytest.approx(exact.mean_lce, rel=0.5)


@pytest.mark.parametrize("bad", [[1.0, -1.0, 1.0], [1.0, np.nan, 1.0], [0.0, 0.0, 0.0],
                                 [1.0, 1.0]])
def test_bad_weights_are_refused(bad: list[float]) -> None:
    with pytest.raises(CalibrationInputError, match="weight"):
        local_calibration([0.0, 1.0, 2.0], [1, 0, 1], [0.9, 0.8, 0.7], gamma=1.0,
                          sample_weight=bad)
