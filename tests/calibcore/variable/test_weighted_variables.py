"""Row weights in the variable-based diagnostics (VECE, its bins, the LOESS curves, the
ranking and its permutation test).

The golden values are independent of the weighted code: the rows repeated by their
integer weights through the unweighted functions, and a VECE computed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.exceptions import CalibrationInputError
from calibcore.variable import (
    loess,
    loess_curves,
    rank_variables,
    variable_bins,
    variable_ece,
    variable_eces,
)
from calibcore.variable._loess_moments import fit_by_moments, fit_only
from calibcore.variable._loess_windows import _bandwidth, _deltas, _operator_rows
from calibcore.variable._permutation import permutation_p_value, weighted_permuted_vece


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A rounded variable (ties), binary outcomes whose rate drifts from the
    probabilities along it, and integer weights 0-3 (zeros included)."""
    rng = np.random.default_rng(seed)
    v = np.round(rng.normal(size=n), 1)
    p = 1.0 / (1.0 + np.exp(-(v + rng.normal(size=n))))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-1.4 * v))).astype(int)
    w = rng.integers(0, 4, size=n).astype(float)
    w[:3] = 1.0
    return v, y, p, w


def _repeat(w: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    counts = w.astype(int)
    return [np.repeat(a, counts, axis=0) for a in arrays]


# -- VECE and its bins -----------------------------------------------------------------------
def test_a_hand_computed_weighted_vece() -> None:
    # top-label view of P(class 1): predicted error 1 - max(p, 1 - p), error 1[y != argmax]
    p = np.array([0.8, 0.6, 0.3, 0.9, 0.2])
    y = np.array([1, 0, 0, 0, 1])
    w = np.array([1.0, 3.0, 2.0, 0.5, 1.5])
    # a: predicted (0.2 + 3 * 0.4) / 4 = 0.35, error 3 / 4 = 0.75, gap 0.4, weight 4
    # b: predicted (2 * 0.3 + 0.5 * 0.1 + 1.5 * 0.2) / 4 = 0.2375, error 2 / 4, gap 0.2625
    expected = 4 / 8 * 0.4 + 4 / 8 * 0.2625
    assert variable_ece(["a", "a", "b", "b", "b"], y, p, sample_weight=w) == pytest.approx(
        expected, abs=1e-15)
    # numeric, 2 equal-weight bins: cumulative weight 0.5 1 2 3 5 6 reaches half (3) at v = 4,
    # so the bins are v <= 4 (weight 3) and v in {5, 6} (weight 3)
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    p = np.array([0.9, 0.8, 0.7, 0.6, 0.9, 0.7])
    y = np.array([1, 1, 0, 1, 0, 1])
    w = np.array([0.5, 0.5, 1.0, 1.0, 2.0, 1.0])
    low = abs((0.5 * 0.1 + 0.5 * 0.2 + 0.3 + 0.4) / 3 - 1.0 / 3)  # row 3 (p 0.7, y 0) wrong
    high = abs((2.0 * 0.1 + 0.3) / 3 - 2.0 / 3)  # row 5 (p 0.9, y 0) wrong, weight 2
    assert variable_ece(v, y, p, n_bins=2, sample_weight=w) == pytest.approx(
        0.5 * low + 0.5 * high, abs=1e-15)
    table = variable_bins(v, y, p, n_bins=2, sample_weight=w)
    assert table["weight"].tolist() == [3.0, 3.0]
    assert table["n"].tolist() == [4, 2]
    assert table["error"].tolist() == pytest.approx([1 / 3, 2 / 3], abs=1e-15)
    assert table["n_eff"].tolist() == pytest.approx([9 / 2.5, 9 / 5], abs=1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16), n=st.integers(2, 80), n_bins=st.integers(1, 12),
       decimals=st.integers(0, 2))
def test_integer_weights_give_the_vece_of_the_repeated_rows(seed: int, n: int, n_bins: int,
                                                             decimals: int) -> None:
    v, y, p, w = _data(n, seed)
    v = np.round(v, decimals)
    rv, ry, rp = _repeat(w, v, y, p)
    assert variable_ece(v, y, p, n_bins=n_bins, sample_weight=w) == pytest.approx(
        variable_ece(rv, ry, rp, n_bins=n_bins), abs=1e-12)
    categories = np.array(list("abcd"))[np.abs(v * 10).astype(int) % 4]
    assert variable_ece(categories, y, p, sample_weight=w) == pytest.approx(
        variable_ece(np.repeat(categories, w.astype(int)), ry, rp), abs=1e-12)


def test_integer_weights_give_the_bins_of_the_repeated_rows() -> None:
    v, y, p, w = _data(200, 3)
    rv, ry, rp = _repeat(w, v, y, p)
    ours, theirs = (variable_bins(v, y, p, sample_weight=w), variable_bins(rv, ry, rp))
    assert ours["bin"].tolist() == theirs["bin"].tolist()
    assert ours["weight"].tolist() == theirs["n"].astype(float).tolist()
    for column in ("left", "right", "error", "predicted_error", "gap"):
        np.testing.assert_allclose(ours[column], theirs[column], rtol=0, atol=1e-12)
    # the intervals are on Kish's effective size, so they are wider than the repeated rows'
    assert (ours["error_high"] - ours["error_low"] >= theirs["error_high"]
            - theirs["error_low"] - 1e-12).all()
    table = variable_eces([v, np.round(v)], y, [p, 1 - p], sample_weight=w)
    assert table[0, 0] == variable_ece(v, y, p, sample_weight=w)
    assert table[1, 1] == variable_ece(np.round(v), y, 1 - p, sample_weight=w)


def test_weights_all_one_are_the_unweighted_results_bit_for_bit() -> None:
    v, y, p, _ = _data(300, 4)
    ones = np.ones(v.size)
    assert variable_ece(v, y, p, sample_weight=ones) == variable_ece(v, y, p)
    pd.testing.assert_frame_equal(variable_bins(v, y, p, sample_weight=ones),
                                  variable_bins(v, y, p), check_exact=True)
    ours, theirs = (loess_curves(v, y, p, n_points=60, sample_weight=ones),
                    loess_curves(v, y, p, n_points=60))
    for key in ("x", "error", "error_low", "predicted_error_high", "histogram_counts"):
        np.testing.assert_array_equal(getattr(ours, key), getattr(theirs, key))
    features = pd.DataFrame({"v": v, "c": np.round(v) % 3})
    pd.testing.assert_frame_equal(
        rank_variables(features, y, p, n_permutations=20, n_points=60, sample_weight=ones),
        rank_variables(features, y, p, n_permutations=20, n_points=60), check_exact=True)


@pytest.mark.slow
def test_the_weighted_kernels_with_unit_weights_are_the_unweighted_ones() -> None:
    # the weighted code itself (not only the all-ones shortcut) reduces to the unweighted
    rng = np.random.default_rng(5)
    x = np.sort(np.round(rng.normal(size=5000), 2))
    y = rng.random(x.size)
    ones = np.ones(x.size)
    points = np.linspace(-1.5, 1.5, 40)
    for span in (0.1, 0.8, 1.3):
        np.testing.assert_array_equal(_bandwidth(x, points, span, ones),
                                      _bandwidth(x, points, span))
    h = _bandwidth(x, points, 0.5)
    for got, want in zip(fit_by_moments(x, y[None, :], points, h, ones),
                         fit_by_moments(x, y[None, :], points, h), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        fit_only(x, y, points, h, lambda _: None, 7, sample_weight=ones),
        fit_only(x, y, points, h, lambda _: None, 7))
    small = x[::50]
    operator = _operator_rows(small, small, 0.6, np.ones(small.size))
    np.testing.assert_array_equal(operator, _operator_rows(small, small, 0.6))
    assert _deltas(operator, np.ones(small.size)) == _deltas(operator)


@pytest.mark.slow
def test_scaling_every_weight_changes_nothing() -> None:
    v, y, p, _ = _data(400, 6)
    w = np.random.default_rng(6).uniform(0.2, 3.0, v.size)
    for scale in (2.5, 1e-3):
        assert variable_ece(v, y, p, sample_weight=scale * w) == pytest.approx(
            variable_ece(v, y, p, sample_weight=w), rel=1e-12)
        ours, theirs = (loess_curves(v, y, p, n_points=60, sample_weight=scale * w),
                        loess_curves(v, y, p, n_points=60, sample_weight=w))
        for key in ("x", "error", "predicted_error"):
            np.testing.assert_allclose(getattr(ours, key), getattr(theirs, key), rtol=0,
                                       atol=1e-12, err_msg=key)
    features = pd.DataFrame({"v": v, "c": np.round(v) % 3})
    ours, theirs = (rank_variables(features, y, p, n_permutations=30, n_points=60,
                                   sample_weight=s * w) for s in (2.5, 1.0))
    pd.testing.assert_frame_equal(ours, theirs, check_exact=False, rtol=1e-10)


# -- LOESS -----------------------------------------------------------------------------------
@pytest.mark.parametrize("span", [0.3, 0.8, 1.2])
def test_integer_weights_give_the_loess_fit_and_band_of_the_repeated_rows(span: float) -> None:
    v, y, _, w = _data(150, 7)
    points = np.linspace(-2.0, 2.0, 41)
    ours = loess(v, y.astype(float), points, span=span, sample_weight=w)
    theirs = loess(*_repeat(w, v, y.astype(float)), points, span=span)
    assert ours.exact and theirs.exact
    for key in ("fit", "low", "high", "standard_error", "leverage"):
        np.testing.assert_allclose(getattr(ours, key), getattr(theirs, key), rtol=0,
                                   atol=1e-9, err_msg=key)
    for key in ("residual_scale", "delta1", "delta2", "degrees_of_freedom"):
        assert getattr(ours, key) == pytest.approx(getattr(theirs, key), rel=1e-9), key


def test_integer_weights_give_the_curves_of_the_repeated_rows() -> None:
    v, y, p, w = _data(220, 8)
    rv, ry, rp = _repeat(w, v, y, p)
    for curve_range in ("5-95", "all"):
        ours = loess_curves(v, y, p, span=0.5, n_points=80, curve_range=curve_range,
                            sample_weight=w)
        theirs = loess_curves(rv, ry, rp, span=0.5, n_points=80, curve_range=curve_range)
        np.testing.assert_array_equal(ours.x, theirs.x)
        for key in ("error", "error_low", "error_high", "predicted_error",
                    "predicted_error_low", "predicted_error_high"):
            np.testing.assert_allclose(getattr(ours, key), getattr(theirs, key), rtol=0,
                                       atol=1e-9, err_msg=key)
        assert ours.vce_max == pytest.approx(theirs.vce_max, abs=1e-9)
        assert ours.v_star == theirs.v_star
        np.testing.assert_array_equal(ours.gaps, theirs.gaps)


def test_large_inputs_fit_the_curves_of_the_repeated_rows() -> None:
    # above n_exact rows the fits come from block power sums (weighted sums here); the
    # bands' statistics are approximated from a subsample, differently, so only the fits
    v, y, p, w = _data(2500, 9)
    ours = loess_curves(v, y, p, n_points=60, sample_weight=w)
    theirs = loess_curves(*_repeat(w, v, y, p), n_points=60)
    assert not ours.exact
    for key in ("error", "predicted_error"):
        np.testing.assert_allclose(getattr(ours, key), getattr(theirs, key), rtol=0,
                                   atol=1e-9, err_msg=key)
    band = ours.error_high - ours.error_low
    reference = theirs.error_high - theirs.error_low
    np.testing.assert_allclose(band, reference, rtol=0.02)


def test_a_sentinel_gap_is_found_with_weights() -> None:
    rng = np.random.default_rng(10)
    v = np.concatenate([rng.uniform(0, 60, 270), np.full(30, 999.0)])
    p = rng.uniform(0.55, 0.95, v.size)
    y = (rng.random(v.size) < p).astype(int)
    w = rng.integers(1, 4, v.size).astype(float)
    curves = loess_curves(v, y, p, curve_range="all", sample_weight=w)
    assert curves.gaps.shape == (1, 2) and curves.gaps[0, 1] == 999.0
    # never strictly inside the gap, where no row is
    assert not curves.gaps[0, 0] < curves.v_star < curves.gaps[0, 1]
    inside = (curves.x > curves.gaps[0, 0]) & (curves.x < curves.gaps[0, 1])
    assert inside.any() and np.isnan(curves.error[inside]).all()


def test_weights_must_leave_some_weight() -> None:
    v, y, p, _ = _data(30, 11)
    with pytest.raises(CalibrationInputError, match="weight 0"):
        variable_ece(np.where(np.arange(30) < 10, v, np.nan), y, p,
                     sample_weight=np.r_[np.zeros(10), np.ones(20)])
    with pytest.raises(CalibrationInputError, match="negative"):
        loess_curves(v, y, p, sample_weight=-np.ones(30))


# -- the ranking and its permutation test ----------------------------------------------------
def test_integer_weights_rank_as_the_repeated_rows() -> None:
    v, y, p, w = _data(600, 12)
    rng = np.random.default_rng(12)
    features = pd.DataFrame({"v": v, "noise": rng.normal(size=v.size),
                             "group": rng.choice(["a", "b", "c"], v.size),
                             "late": np.where(rng.random(v.size) < 0.1, np.nan, v * v)})
    ours = rank_variables(features, y, p, n_permutations=40, n_points=80, sample_weight=w)
    repeated = features.loc[features.index.repeat(w.astype(int))].reset_index(drop=True)
    theirs = rank_variables(repeated, *_repeat(w, y, p), n_permutations=40, n_points=80)
    assert ours["variable"].tolist() == theirs["variable"].tolist()
    assert ours["kind"].tolist() == theirs["kind"].tolist()
    np.testing.assert_allclose(ours["vece"], theirs["vece"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours["vce_max"], theirs["vce_max"], rtol=0, atol=1e-9)
    assert ours["v_star"].tolist() == theirs["v_star"].tolist()
    assert dict(zip(ours["variable"], ours["n"], strict=True)) == {
        "v": 600, "noise": 600, "group": 600, "late": 537}


def test_the_weighted_test_tells_a_miscalibrated_variable_from_noise() -> None:
    rng = np.random.default_rng(14)
    n = 500
    signal, noise = rng.normal(size=n), rng.normal(size=n)
    p = rng.uniform(0.6, 0.95, n)
    # calibrated where signal > 0, far too confident where it is below
    y = (rng.random(n) < np.where(signal > 0, p, p - 0.4)).astype(int)
    w = rng.uniform(0.5, 3.0, n)
    ranking = rank_variables(pd.DataFrame({"signal": signal, "noise": noise}), y, p,
                             n_permutations=99, n_points=60, sample_weight=w)
    p_value = dict(zip(ranking["variable"], ranking["p_value"], strict=True))
    assert ranking["variable"].tolist() == ["signal", "noise"]
    assert p_value["signal"] == pytest.approx(1 / 100)
    assert p_value["noise"] > 0.2


def test_the_weighted_null_permutes_v_against_rows_that_keep_their_weights() -> None:
    rng = np.random.default_rng(13)
    residual = rng.normal(size=40)
    weights = rng.integers(1, 5, 40).astype(float)
    values = np.sort(np.round(rng.normal(size=40), 1))
    null = weighted_permuted_vece(residual, weights, values, None, 4, 300, 0)
    # the first permutation by hand: V's sorted values go to the rows in the generator's
    # first random order; the bins are pandas.qcut's of the values repeated by the weights
    # that landed on them, and each row keeps its residual with its weight
    order = np.random.default_rng(0).permutation(40)
    drawn = weights[order]
    edges = pd.qcut(np.repeat(values, drawn.astype(int)), 4, retbins=True,
                    duplicates="drop")[1]
    bins = np.clip(np.searchsorted(edges, values, side="left") - 1, 0, edges.size - 2)
    sums = np.bincount(bins, weights=drawn * residual[order])
    assert null[0] == pytest.approx(np.abs(sums).sum() / weights.sum(), abs=1e-12)
    # the same seed, the same null; p-values in (0, 1]
    np.testing.assert_array_equal(null, weighted_permuted_vece(residual, weights, values,
                                                               None, 4, 300, 0))
    assert 0 < permutation_p_value(float(np.median(null)), null) <= 1


@pytest.mark.parametrize("integer", [True, False])
def test_the_unpermuted_statistic_is_the_observed_vece(integer: bool) -> None:
    # the null's statistic (compiled) at the rows' own order equals variable_ece: the same
    # equal-weight bins, ties kept together
    from calibcore.variable._binning import qcut_levels
    from calibcore.variable._permutation import _permutation_vece

    rng = np.random.default_rng(15)
    n = 300
    v = np.round(rng.normal(size=n), 1)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(int)
    w = rng.integers(1, 5, n).astype(float) if integer else rng.uniform(0.1, 4.0, n)
    residual = (1.0 - np.maximum(p, 1.0 - p)) - (y != (p > 0.5)).astype(float)
    order = np.argsort(v, kind="stable")
    identity = order.astype(np.float64)  # position k holds row order[k]: V sorted
    work = (np.empty(n), np.empty(n))
    for n_bins in (3, 10):
        statistic = _permutation_vece(identity, w, w * residual, v[order],
                                      np.empty(0, dtype=np.intp), qcut_levels(n_bins),
                                      integer, *work)
        assert statistic == pytest.approx(variable_ece(v, y, p, n_bins=n_bins,
                                                       sample_weight=w), abs=1e-12)
    categories = (np.abs(v * 10) % 3).astype(int)
    order = np.argsort(categories, kind="stable")
    cuts = np.concatenate([[0], np.cumsum(np.bincount(categories))]).astype(np.intp)
    statistic = _permutation_vece(order.astype(np.float64), w, w * residual, np.empty(0), cuts,
                                  qcut_levels(10), integer, *work)
    assert statistic == pytest.approx(variable_ece(categories.astype(str), y, p,
                                                   sample_weight=w), abs=1e-12)
