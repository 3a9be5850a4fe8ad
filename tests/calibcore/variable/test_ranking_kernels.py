"""The ranking's fast kernels against the straightforward computations they replace.

* LOESS window moments from block power sums (``_loess_moments.window_fit_moments``)
  against the tricube-weighted sums taken row by row, as the code did before;
* swap targets from numpy's PCG64 stepped in compiled code (``_pcg64.fill_targets``)
  against ``numpy.random.Generator.shuffle`` itself, and the null with and without them;
* ``rank_variables`` above ``N_EXACT`` rows (curves fitted on worker threads) against
  VECE by ``pandas.qcut``, a permutation p-value by numpy's own shuffle and VCE(v*) by
  one weighted least-squares problem per point.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

from calibcore.variable import _loess_moments, _pcg64, _permutation, rank_variables
from calibcore.variable._loess_moments import FIT_BLOCK_ROWS, block_power_sums
from calibcore.variable.smoothing import loess_fit
from tests.calibcore.variable.test_smoothing import reference_rows


def row_by_row_moments(x, y, points, inverse_bandwidth, start, stop):
    """The previous kernel's sums, in numpy: sum w d^k (k <= 4) and sum w y d^k (k <= 2)."""
    moments = np.empty((points.size, 5))
    cross = np.empty((points.size, 3))
    for e in range(points.size):
        d = (x[start[e]:stop[e]] - points[e]) * inverse_bandwidth[e]
        w = np.maximum(1.0 - np.abs(d) ** 3, 0.0) ** 3
        moments[e] = [np.sum(w * d**k) for k in range(5)]
        cross[e] = [np.sum(w * y[start[e]:stop[e]] * d**k) for k in range(3)]
    return moments, cross


def _variable(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort({
        "normal": lambda: rng.normal(size=n),
        "lognormal": lambda: rng.lognormal(10.0, 1.5, n),
        "ties": lambda: np.round(rng.normal(0.0, 3.0, n)),
        "blocks of one value": lambda: np.repeat(rng.normal(size=n // FIT_BLOCK_ROWS + 1),
                                                 FIT_BLOCK_ROWS)[:n],
    }[kind]())


@pytest.mark.parametrize("kind", ["normal", "lognormal", "ties", "blocks of one value"])
@pytest.mark.parametrize("half_width", [0.9, 0.25])
def test_block_power_sums_give_the_row_by_row_window_moments(kind, half_width):
    rng = np.random.default_rng(12)
    n = 4 * FIT_BLOCK_ROWS + 321
    x = _variable(kind, n, rng)
    y = (rng.random(n) < 0.3) - rng.random(n) * 0.5
    points = np.concatenate([np.quantile(x, np.linspace(0.0, 1.0, 23)), [x[0] - 1.0]])
    # windows reaching over several blocks, ending anywhere in a block
    bandwidth = np.full(points.size, half_width * (x[-1] - x[0])) + rng.random(points.size)
    start = np.searchsorted(x, points - bandwidth, side="left")
    stop = np.searchsorted(x, points + bandwidth, side="right")
    moments, cross = np.empty((points.size, 5)), np.empty((points.size, 3))
    _loess_moments.window_fit_moments(x, y, points, 1.0 / bandwidth, start, stop, moments,
                                      cross, block_power_sums(x, y))
    expected_moments, expected_cross = row_by_row_moments(x, y, points, 1.0 / bandwidth,
                                                          start, stop)
    # relative to the window's weight sum: the sums differ in rounding only
    scale = np.maximum(expected_moments[:, :1], 1.0)
    np.testing.assert_allclose(moments / scale, expected_moments / scale, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cross / scale, expected_cross / scale, rtol=0, atol=1e-12)


@pytest.mark.parametrize("span", [0.8, 0.3])
def test_loess_fit_from_blocks_solves_each_weighted_least_squares_problem(span):
    rng = np.random.default_rng(5)
    n = 3 * FIT_BLOCK_ROWS + 77
    x = np.sort(rng.normal(50.0, 20.0, n))
    y = (rng.random(n) < 1 / (1 + np.exp(-np.sin(x / 10)))).astype(float)
    points = np.linspace(*np.quantile(x, [0.05, 0.95]), 17)
    expected = reference_rows(x, points, span) @ y
    np.testing.assert_allclose(loess_fit(x, y, points, span=span), expected, rtol=0,
                               atol=1e-12)


def test_fill_targets_makes_numpys_swaps_and_leaves_numpys_state():
    n = 10_007
    ours, theirs = np.random.default_rng(31), np.random.default_rng(31)
    ours.integers(0, 2**32, 5, dtype=np.uint32)  # an odd number of 32-bit words drawn
    theirs.integers(0, 2**32, 5, dtype=np.uint32)
    views = _pcg64.pcg64_words(ours)
    assert views is not None
    targets = np.empty(n - 1, dtype=np.intp)
    # in blocks, as the shuffle draws them
    for top in range(n - 1, 0, -1000):
        bottom = max(top - 1000, 0)
        _pcg64.fill_targets(targets[n - 1 - top:], top, bottom, *views)
    shuffled = np.arange(n)
    for swap, position in enumerate(range(n - 1, 0, -1)):
        target = targets[swap]
        assert 0 <= target <= position
        shuffled[position], shuffled[target] = shuffled[target], shuffled[position]
    expected = np.arange(n)
    theirs.shuffle(expected)
    np.testing.assert_array_equal(shuffled, expected)
    assert ours.bit_generator.state == theirs.bit_generator.state
    assert ours.integers(0, 10**9, 3).tolist() == theirs.integers(0, 10**9, 3).tolist()


def test_null_is_numpys_shuffle_with_and_without_the_compiled_generator(monkeypatch):
    rng = np.random.default_rng(2)
    residual = rng.normal(size=5_000) * 0.3
    sizes = np.array([1_000, 1_500, 500, 2_000])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    shuffler, shuffled, expected = np.random.default_rng(9), residual.copy(), []
    for _ in range(40):
        shuffler.shuffle(shuffled)
        expected.append(np.abs(np.add.reduceat(shuffled, starts)).sum() / residual.size)
    inline = _permutation.permuted_vece(residual, sizes, 40, 9)
    np.testing.assert_allclose(inline, expected, rtol=1e-12)
    monkeypatch.setattr(_permutation, "pcg64_words", lambda rng: None)
    np.testing.assert_array_equal(_permutation.permuted_vece(residual, sizes, 40, 9), inline)


@pytest.mark.parametrize("n_rows", [5_000, _permutation.PARALLEL_MIN_ROWS + 1])
def test_cuts_of_the_same_shuffles_are_each_cut_s_own_null_bit_for_bit(n_rows, monkeypatch):
    """Variables sharing their rows share the shuffles: each cut of them is the null the
    variable gets alone, to the last bit, on one stream and in chunks on every core, and
    through numpy's shuffle (above 2^32 rows) as through the compiled one."""
    rng = np.random.default_rng(4)
    residual = rng.normal(size=n_rows) * 0.3
    tenth = n_rows // 10
    all_sizes = [np.full(10, tenth), np.array([tenth + 1, tenth - 1] + [tenth] * 8),
                 np.array([n_rows - 3, 1, 2])]
    for sizes in all_sizes:
        sizes[-1] += n_rows - sizes.sum()
    drawn = []
    together = _permutation.permuted_veces(residual, all_sizes, 30, 5, lambda: drawn.append(1))
    assert together.shape == (3, 30) and len(drawn) == 90
    for sizes, null in zip(all_sizes, together, strict=True):
        np.testing.assert_array_equal(null, _permutation.permuted_vece(residual, sizes, 30, 5))
    monkeypatch.setattr(_permutation, "_MAX_32_BIT_ROWS", 0)  # numpy's shuffle and reduceat
    for sizes, null in zip(all_sizes, _permutation.permuted_veces(residual, all_sizes, 30, 5),
                           strict=True):
        np.testing.assert_array_equal(null, _permutation.permuted_vece(residual, sizes, 30, 5))


def test_a_ranking_shuffles_once_per_permutation_for_variables_sharing_their_rows(
        monkeypatch):
    """Three complete numeric variables whose ties give different bin sizes: three nulls,
    drawn from one set of shuffles, with the p-values of three separate draws."""
    rng = np.random.default_rng(6)
    n = 3_000
    table = pd.DataFrame({"a": rng.normal(size=n).round(1), "b": rng.normal(size=n).round(2),
                          "c": rng.normal(size=n)})
    proba = rng.uniform(0.05, 0.95, n)
    labels = (rng.uniform(size=n) < proba ** (1 + table["a"].clip(0, 1).to_numpy())).astype(int)
    calls = []
    original = _permutation.permuted_veces

    def counting(residual, all_sizes, *args):  # type: ignore[no-untyped-def]
        calls.append((residual.size, len(all_sizes)))
        return original(residual, all_sizes, *args)

    monkeypatch.setattr(_permutation, "permuted_veces", counting)
    ranking = rank_variables(table, labels, np.column_stack([1 - proba, proba]),
                             n_permutations=50).set_index("variable")
    assert [call for call in calls if call[0] == n] == [(n, 3)]  # (and the warm-up's)
    for name in table:
        # the variable's own null, drawn alone: its bins' sizes, the residuals
        # predicted error - error of the top label
        sizes = np.bincount(pd.qcut(table[name], 10, labels=False, duplicates="drop"))
        residual = (1.0 - np.maximum(proba, 1 - proba)) - ((proba >= 0.5) != labels)
        alone = _permutation.permuted_vece(residual, sizes[sizes > 0], 50, 0)
        assert ranking.loc[name, "p_value"] == _permutation.permutation_p_value(
            ranking.loc[name, "vece"], alone)


def _reference_vece(v, residual, n_bins=10):
    bins = pd.qcut(v, n_bins, labels=False, duplicates="drop")
    return float(np.abs(pd.Series(residual).groupby(bins).sum()).sum() / v.size)


def test_ranking_above_n_exact_equals_the_straightforward_computations():
    """6,000 rows (the moment path, curves on worker threads): VECE by qcut, the p-value
    by numpy shuffling the residuals, VCE(v*) and v* by one WLS problem per point."""
    rng = np.random.default_rng(21)
    n, n_points, n_permutations, seed = 6_000, 40, 99, 3
    features = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(0, 10, n),
                             "c": rng.lognormal(0.0, 0.5, n)})
    p_one = 1 / (1 + np.exp(-(features["a"].to_numpy() + 0.2)))
    labels = (rng.random(n) < p_one ** 1.3).astype(int)
    confidence = np.maximum(p_one, 1 - p_one)
    error = (labels != (p_one >= 0.5)).astype(float)
    residual = (1 - confidence) - error
    calls = []
    ranking = rank_variables(features, labels, p_one, n_points=n_points,
                             n_permutations=n_permutations, random_state=seed,
                             progress=lambda done, total: calls.append(done))
    shuffler, shuffled, null = np.random.default_rng(seed), residual.copy(), []
    starts = np.arange(0, n, n // 10)  # 10 equal-mass bins of 600 rows
    for _ in range(n_permutations):
        shuffler.shuffle(shuffled)
        null.append(np.abs(np.add.reduceat(shuffled, starts)).sum() / n)
    for name in features:
        row = ranking.set_index("variable").loc[name]
        v = features[name].to_numpy()
        vece = _reference_vece(v, residual)
        assert row["vece"] == pytest.approx(vece, rel=1e-12)
        exceed = np.sum(np.array(null) >= vece * (1 - 1e-9))
        assert row["p_value"] == pytest.approx((1 + exceed) / (1 + n_permutations), rel=1e-15)
        order = np.argsort(v, kind="stable")
        points = np.linspace(*np.quantile(v, [0.05, 0.95]), n_points)
        gap = np.abs(reference_rows(v[order], points, 0.8) @ -residual[order])
        assert row["vce_max"] == pytest.approx(gap.max(), rel=1e-10)
        assert row["v_star"] == points[np.argmax(gap)]
    assert ranking["p_value"].iloc[0] == pytest.approx(1 / (1 + n_permutations))
    assert calls == sorted(calls) and calls[-1] == 3


def test_a_raise_from_progress_in_a_curve_thread_stops_the_ranking(monkeypatch):
    """The curves are fitted on worker threads: a cancel raised from the progress
    callback there reaches the caller (progress reported at every step here)."""
    from calibcore._progress import Heartbeat
    from calibcore.variable import ranking as ranking_module

    monkeypatch.setattr(ranking_module, "Heartbeat",
                        lambda callback, *values: Heartbeat(callback, *values, interval=0.0))
    rng = np.random.default_rng(0)
    n = 3_000
    features = rng.normal(size=(n, 4))
    p_one = rng.random(n)
    labels = (rng.random(n) < p_one).astype(int)
    raised_in = []

    class Cancelled(Exception):
        pass

    def progress(done: float, total: int) -> None:
        name = threading.current_thread().name
        if name.startswith("calibcore-curves"):
            raised_in.append(name)
            raise Cancelled

    with pytest.raises(Cancelled):
        rank_variables(features, labels, p_one, n_permutations=50, progress=progress)
    assert raised_in


def test_numeric_columns_with_few_values_are_categorical_wherever_the_values_appear():
    """The distinct values are counted on the first rows first: a column repeating a few
    values there but not after is still numeric, one with ten values is categorical."""
    rng = np.random.default_rng(4)
    n = 3_000
    late = np.concatenate([np.tile([1.0, 2.0, 3.0], 500), rng.normal(size=n - 1_500)])
    ten = rng.integers(0, 10, n).astype(float)
    eleven = np.concatenate([np.zeros(n - 11), np.arange(11.0)])
    p_one = rng.random(n)
    labels = (rng.random(n) < p_one).astype(int)
    ranking = rank_variables(pd.DataFrame({"late": late, "ten": ten, "eleven": eleven}),
                             labels, p_one, n_permutations=0)
    kinds = dict(zip(ranking["variable"], ranking["kind"], strict=True))
    assert kinds == {"late": "numeric", "ten": "categorical", "eleven": "numeric"}
