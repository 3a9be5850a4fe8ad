"""Variable-based calibration (calibcore.variable): VECE, curves, bins, ranking.

References are written here independently: VECE with ``pandas.qcut`` and a
loop over groups (as the paper's reference code computes it), LOESS rows by
weighted least squares per point, Wilson intervals from the formula, and the
permutation null by shuffling V itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from scipy.stats import t as student_t

from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import expected_calibration_error
from calibcore.variable import (
    LoessCurves,
    loess_curves,
    rank_variables,
    variable_bins,
    variable_ece,
    variable_eces,
)

DATA = Path("/work/shared/data/default_nb.csv")


def reference_vece(v, y_true, proba, n_bins):
    frame = pd.DataFrame(
        {
            "v": v,
            "predicted_error": 1 - proba.max(axis=1),
            "incorrect": (proba.argmax(axis=1) != y_true).astype(float),
        }
    ).dropna()
    frame["bin"] = pd.qcut(frame["v"], n_bins, duplicates="drop")
    total = 0.0
    for _, group in frame.groupby("bin", observed=True):
        gap = abs(group["predicted_error"].mean() - group["incorrect"].mean())
        total += len(group) / len(frame) * gap
    return total


def reference_curve(x, y, points, span):
    """Brute-force LOESS fit and band (n x n smoother matrix, one pseudo-inverse per point)."""

    def rows(at):
        q = min(x.size, int(np.floor(x.size * span)))
        out = np.empty((at.size, x.size))
        for e, centre in enumerate(at):
            distance = np.abs(x - centre)
            bandwidth = np.sort(distance)[q - 1]
            weights = np.where(distance < bandwidth, (1 - (distance / bandwidth) ** 3) ** 3, 0)
            design = np.column_stack([np.ones(x.size), x - centre, (x - centre) ** 2])
            root = np.sqrt(weights)
            # intercept of the weighted least squares: first row of (root X)^+, times root
            out[e] = np.linalg.pinv(design * root[:, None], rcond=1e-12)[0] * root
        return out

    smoother = rows(x)
    at_points = rows(points)
    complement = np.eye(x.size) - smoother
    product = complement.T @ complement
    delta1, delta2 = np.trace(product), np.trace(product @ product)
    scale = np.sqrt(np.sum((y - smoother @ y) ** 2) / delta1)
    half = student_t.ppf(0.975, delta1**2 / delta2) * scale * np.linalg.norm(at_points, axis=1)
    fit = at_points @ y
    return fit, fit - half, fit + half


def random_predictions(rng, n, n_classes=2):
    proba = rng.dirichlet(np.ones(n_classes), size=n)
    labels = np.array([rng.choice(n_classes, p=row) for row in proba])
    return labels, proba


# --- VECE ---------------------------------------------------------------------


def test_variable_eces_equal_variable_ece_for_each_pair():
    rng = np.random.default_rng(21)
    labels, proba = random_predictions(rng, 500, n_classes=3)
    other = rng.dirichlet(np.ones(3), size=500)
    variables = [rng.normal(size=500), rng.integers(0, 4, 500).astype(float)]
    variables[0][::7] = np.nan
    table = variable_eces(variables, labels, [proba, other], n_bins=7)
    assert table.shape == (2, 2)
    for row, v in enumerate(variables):
        for column, y_prob in enumerate([proba, other]):
            assert table[row, column] == variable_ece(v, labels, y_prob, n_bins=7)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(2, 300),
    n_bins=st.integers(1, 15),
    n_classes=st.integers(2, 4),
    distinct=st.sampled_from([3, 10, None]),
)
def test_vece_matches_pandas_qcut_reference(seed, n, n_bins, n_classes, distinct):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=n) if distinct is None else rng.integers(0, distinct, n).astype(float)
    assume(np.unique(v).size > 1)  # pandas.qcut drops every row of a constant variable
    labels, proba = random_predictions(rng, n, n_classes)
    assert variable_ece(v, labels, proba, n_bins=n_bins) == pytest.approx(
        reference_vece(v, labels, proba, n_bins), abs=1e-12
    )


def test_vece_binary_probability_column_and_missing_values():
    rng = np.random.default_rng(1)
    labels, proba = random_predictions(rng, 500)
    v = rng.normal(size=500)
    v[::7] = np.nan
    expected = reference_vece(v, labels, proba, 10)
    assert variable_ece(v, labels, proba[:, 1]) == pytest.approx(expected, abs=1e-12)
    assert variable_ece(pd.Series(v), labels, proba) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n_bins", [3, 5, 7, 9, 11])
def test_theorem_5_1_ece_zero_while_vece_is_half_minus_half_over_bins(n_bins):
    """Kelly & Smyth 2023, Theorem 5.1: p = 0.5 everywhere, error = 1[v > 1/2]."""
    n = 13_860  # n / n_bins is even for every K here, so the middle bin splits evenly
    v = (np.arange(n) + 0.5) / n
    y_true = (v > 0.5).astype(int)  # argmax of (0.5, 0.5) is class 0: wrong iff v > 1/2
    y_prob = np.full(n, 0.5)
    assert expected_calibration_error(y_true, y_prob) == pytest.approx(0.0, abs=1e-15)
    assert variable_ece(v, y_true, y_prob, n_bins=n_bins) == pytest.approx(
        0.5 - 1 / (2 * n_bins), abs=1e-12
    )


def test_theorem_5_1_curves_show_the_gap():
    n = 6000
    v = (np.arange(n) + 0.5) / n
    curves = loess_curves(v, (v > 0.5).astype(int), np.full(n, 0.5))
    np.testing.assert_allclose(curves.predicted_error, 0.5, atol=1e-12)
    np.testing.assert_allclose(
        curves.predicted_error_high - curves.predicted_error_low, 0, atol=1e-9
    )
    middle = np.argmin(np.abs(curves.x - 0.5))
    assert curves.error[middle] == pytest.approx(0.5, abs=0.01)
    assert curves.error[0] < 0.2 and curves.error[-1] > 0.8
    # the largest gap is far from the step, where the error curve nears 0 or 1
    assert curves.vce_max > 0.4 and abs(curves.v_star - 0.5) > 0.2


finite_v = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 200), n_bins=st.integers(1, 12))
def test_vece_properties(seed, n, n_bins):
    rng = np.random.default_rng(seed)
    labels, proba = random_predictions(rng, n, 3)
    v = rng.normal(size=n)
    vece = variable_ece(v, labels, proba, n_bins=n_bins)
    residual = (1 - proba.max(axis=1)) - (proba.argmax(axis=1) != labels)
    # bounded below by calibration-in-the-large (triangle inequality), above by 1
    assert abs(residual.mean()) - 1e-12 <= vece <= 1 + 1e-12
    # one bin is exactly calibration-in-the-large
    assert variable_ece(v, labels, proba, n_bins=1) == pytest.approx(
        abs(residual.mean()), abs=1e-12
    )
    # rows in any order; V scaled by a power of two (exact, so the same bins)
    order = rng.permutation(n)
    assert variable_ece(
        v[order] * 4.0, labels[order], proba[order], n_bins=n_bins
    ) == pytest.approx(vece, abs=1e-12)
    # categorical view of distinct values: one row per bin is mean |residual|
    assert variable_ece(v.astype(str), labels, proba) == pytest.approx(
        np.abs(pd.Series(residual).groupby(v.astype(str)).sum()).sum() / n, abs=1e-12
    )


def test_constant_variable_is_one_bin():
    rng = np.random.default_rng(2)
    labels, proba = random_predictions(rng, 50)
    residual = (1 - proba.max(axis=1)) - (proba.argmax(axis=1) != labels)
    assert variable_ece(np.ones(50), labels, proba) == pytest.approx(abs(residual.mean()))


@pytest.mark.parametrize(
    ("v", "kwargs", "message"),
    [
        (np.full(4, np.nan), {}, "no non-missing"),
        (np.arange(3.0), {}, "3 values"),
        (np.arange(4.0), {"kind": "ordinal"}, "kind"),
        (np.arange(4.0), {"n_bins": 0}, "n_bins"),
        (np.arange(8.0).reshape(4, 2), {}, "1-D"),
    ],
)
def test_variable_ece_rejects_bad_input(v, kwargs, message):
    with pytest.raises(CalibrationInputError, match=message):
        variable_ece(v, [0, 1, 1, 0], [0.2, 0.7, 0.4, 0.9], **kwargs)


# --- bins and categories ------------------------------------------------------


def wilson(successes, n, level=0.95):
    z = norm.ppf(0.5 + level / 2)
    p = successes / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return centre - half, centre + half


def test_variable_bins_per_category_with_intervals():
    rng = np.random.default_rng(3)
    n = 900
    group = rng.choice(np.array(["b", "a", "c"]), size=n)
    group = group.astype(object)
    group[:5] = None
    labels, proba = random_predictions(rng, n)
    table = variable_bins(group, labels, proba)
    assert list(table["bin"]) == ["a", "b", "c"]
    assert table["left"].isna().all()
    error = (proba.argmax(axis=1) != labels).astype(float)
    predicted = 1 - proba.max(axis=1)
    for row in table.itertuples():
        members = group == row.bin
        assert row.n == members.sum()
        assert row.error == pytest.approx(error[members].mean())
        low, high = wilson(error[members].sum(), members.sum())
        assert (row.error_low, row.error_high) == pytest.approx((low, high), abs=1e-12)
        half = student_t.ppf(0.975, row.n - 1) * predicted[members].std(ddof=1) / np.sqrt(row.n)
        assert row.predicted_error == pytest.approx(predicted[members].mean())
        assert row.predicted_error_high - row.predicted_error == pytest.approx(half, rel=1e-9)
        assert row.gap == pytest.approx(row.error - row.predicted_error)
    vece = np.sum(table["n"] / table["n"].sum() * np.abs(table["gap"]))
    assert variable_ece(group, labels, proba) == pytest.approx(vece)


def test_variable_bins_numeric_edges_follow_qcut():
    rng = np.random.default_rng(4)
    labels, proba = random_predictions(rng, 400)
    v = rng.gamma(2, size=400)
    table = variable_bins(v, labels, proba, n_bins=8)
    categories, edges = pd.qcut(v, 8, duplicates="drop", retbins=True)
    assert table["n"].tolist() == pd.Series(categories).value_counts(sort=False).tolist()
    np.testing.assert_array_equal(table["left"], edges[:-1])
    np.testing.assert_array_equal(table["right"], edges[1:])
    assert table["bin"].iloc[0].startswith("[") and table["bin"].iloc[1].startswith("(")


# --- curves -------------------------------------------------------------------


def test_loess_curves_match_brute_force():
    rng = np.random.default_rng(5)
    n = 160
    v = rng.uniform(18, 80, n)
    labels, proba = random_predictions(rng, n, 3)
    curves = loess_curves(v, labels, proba, span=0.6, n_points=25)
    points = np.linspace(*np.quantile(v, [0.05, 0.95]), 25)
    np.testing.assert_allclose(curves.x, points)
    incorrect = (proba.argmax(axis=1) != labels).astype(float)
    for target, (fit, low, high) in (
        ("error", reference_curve(v, incorrect, points, 0.6)),
        ("predicted_error", reference_curve(v, 1 - proba.max(axis=1), points, 0.6)),
    ):
        np.testing.assert_allclose(getattr(curves, target), fit, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(getattr(curves, f"{target}_low"), low, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(getattr(curves, f"{target}_high"), high, rtol=1e-8, atol=1e-12)
    gap = np.abs(curves.error - curves.predicted_error)
    assert curves.vce_max == gap.max() and curves.v_star == points[gap.argmax()]
    assert isinstance(curves, LoessCurves) and curves.exact and curves.n == n
    assert curves.histogram_counts.sum() == np.sum((v >= points[0]) & (v <= points[-1]))
    assert curves.histogram_edges[0] == points[0] and curves.histogram_edges[-1] == points[-1]


def test_loess_curves_drop_missing_and_reject_categories():
    rng = np.random.default_rng(6)
    labels, proba = random_predictions(rng, 200)
    v = rng.normal(size=200)
    v[:10] = np.nan
    curves = loess_curves(v, labels, proba, n_points=11)
    reference = loess_curves(v[10:], labels[10:], proba[10:], n_points=11)
    np.testing.assert_allclose(curves.error_high, reference.error_high)
    assert (curves.n, curves.n_missing) == (190, 10)
    with pytest.raises(CalibrationInputError, match="not numeric"):
        loess_curves(np.array(["a", "b"] * 100), labels, proba)


def test_curve_ranges_are_the_quantiles_and_the_extremes_of_v():
    rng = np.random.default_rng(8)
    labels, proba = random_predictions(rng, 300)
    v = rng.standard_t(3, size=300)  # heavy tails: the ranges differ
    v[:5] = np.nan
    used = v[5:]
    expected = {
        "5-95": (np.quantile(used, 0.05), np.quantile(used, 0.95)),
        "1-99": (np.quantile(used, 0.01), np.quantile(used, 0.99)),
        "all": (used.min(), used.max()),
    }
    default = loess_curves(v, labels, proba, n_points=21)
    for curve_range, (low, high) in expected.items():
        curves = loess_curves(v, labels, proba, n_points=21, curve_range=curve_range)
        np.testing.assert_allclose(curves.x, np.linspace(low, high, 21), rtol=1e-12)
        assert curves.curve_range == curve_range and curves.n == 295
        assert curves.histogram_counts.sum() == np.sum((used >= low) & (used <= high))
        # the fits use every row: at a point both ranges share, the curves agree
        np.testing.assert_allclose(
            np.interp(0.0, curves.x, curves.error), np.interp(0.0, default.x, default.error),
            atol=0.02)
    assert default.curve_range == "5-95"
    np.testing.assert_array_equal(default.x, loess_curves(v, labels, proba, n_points=21,
                                                          curve_range="5-95").x)
    with pytest.raises(CalibrationInputError, match="curve_range must be one of"):
        loess_curves(v, labels, proba, curve_range="0-100")  # type: ignore[arg-type]


@pytest.mark.parametrize("curve_range", ["5-95", "all"])
def test_integer_variable_histogram_has_one_bar_per_integer(curve_range):
    rng = np.random.default_rng(9)
    hour = rng.integers(0, 24, 1000)  # a departure hour
    labels, proba = random_predictions(rng, 1000)
    curves = loess_curves(hour.astype(float), labels, proba, n_points=15,
                          curve_range=curve_range)
    first, last = int(np.ceil(curves.x[0])), int(np.floor(curves.x[-1]))
    if curve_range == "all":
        assert (first, last) == (0, 23)
    np.testing.assert_array_equal(curves.histogram_edges, np.arange(first, last + 2) - 0.5)
    np.testing.assert_array_equal(curves.histogram_counts, np.bincount(hour)[first:last + 1])


def test_wide_integer_and_real_variables_keep_equal_width_bins():
    rng = np.random.default_rng(10)
    labels, proba = random_predictions(rng, 500)
    for v in (rng.integers(0, 1000, 500).astype(float), rng.uniform(0, 24, 500)):
        curves = loess_curves(v, labels, proba, n_points=11, n_histogram_bins=30,
                              curve_range="all")
        np.testing.assert_allclose(curves.histogram_edges, np.linspace(v.min(), v.max(), 31))
        np.testing.assert_array_equal(curves.histogram_counts,
                                      np.histogram(v, bins=30, range=(v.min(), v.max()))[0])


# --- ranking ------------------------------------------------------------------


def _planted(seed=7, n=3000):
    """Predictions that are calibrated overall but wrong along ``signal``."""
    rng = np.random.default_rng(seed)
    signal = rng.uniform(0, 1, n)
    confidence = rng.uniform(0.6, 0.95, n)
    # over-confident for signal > 1/2, under-confident below
    accuracy = np.clip(confidence + np.where(signal > 0.5, -0.15, 0.15), 0, 1)
    correct = rng.random(n) < accuracy
    labels = np.where(correct, 1, 0)
    features = pd.DataFrame(
        {
            "noise": rng.normal(size=n),
            "signal": signal,
            "group": rng.choice(["x", "y", "z"], size=n),
            "flag": rng.random(n) < 0.3,
            "count": rng.integers(0, 4, n),
        }
    )
    return features, labels, confidence


@pytest.mark.slow
def test_rank_variables_columns_kinds_and_values():
    features, labels, confidence = _planted()
    features.loc[::10, "noise"] = np.nan
    calls = []
    ranking = rank_variables(
        features, labels, confidence, n_permutations=99, progress=lambda *a: calls.append(a)
    )
    assert list(ranking.columns) == [
        "variable",
        "kind",
        "vece",
        "vce_max",
        "v_star",
        "p_value",
        "n",
        "n_missing",
    ]
    # rising fractions of the 5 variables (every 0.25 s at most), then (5, 5) at the end
    assert calls == sorted(calls) and all(total == 5 for _, total in calls)
    assert calls[-1] == (5, 5)
    assert ranking["vece"].is_monotonic_decreasing
    assert ranking["variable"].iloc[0] == "signal"
    rows = ranking.set_index("variable")
    kinds = rows["kind"].to_dict()
    assert kinds == {
        "noise": "numeric",
        "signal": "numeric",
        "group": "categorical",
        "flag": "categorical",
        "count": "categorical",
    }
    assert rows.loc["noise", "n_missing"] == 300 and rows.loc["noise", "n"] == 2700
    for name, row in rows.iterrows():
        expected = variable_ece(features[name], labels, confidence, kind=row["kind"])
        assert row["vece"] == pytest.approx(expected, abs=1e-12)
        assert 1 / 100 <= row["p_value"] <= 1
    assert rows.loc["signal", "p_value"] == pytest.approx(1 / 100)
    curves = loess_curves(features["signal"], labels, confidence)
    assert rows.loc["signal", "vce_max"] == pytest.approx(curves.vce_max)
    assert rows.loc["signal", "v_star"] == pytest.approx(curves.v_star)


def test_rank_variables_categorical_worst_category():
    features, labels, confidence = _planted()
    table = variable_bins(features["group"], labels, confidence)
    worst = table.iloc[np.argmax(np.abs(table["gap"]))]
    row = rank_variables(features[["group"]], labels, confidence, n_permutations=0).iloc[0]
    assert row["v_star"] == worst["bin"]
    assert row["vce_max"] == pytest.approx(abs(worst["gap"]))
    assert np.isnan(row["p_value"])


def test_permutation_p_value_equals_shuffling_v_itself():
    """Same random permutations applied to V, VECE recomputed with pandas.qcut."""
    rng = np.random.default_rng(8)
    n, n_permutations, seed = 240, 60, 11
    labels, proba = random_predictions(rng, n)
    v = rng.normal(size=n) + (proba.argmax(axis=1) != labels) * 0.3
    observed = reference_vece(v, labels, proba, 10)
    shuffler = np.random.default_rng(seed)
    positions = np.arange(n)
    ordered = np.sort(v, kind="stable")
    null = []
    for _ in range(n_permutations):
        shuffler.shuffle(positions)  # the same stream of swaps the residuals get
        permuted = np.empty(n)
        permuted[positions] = ordered
        null.append(reference_vece(permuted, labels, proba, 10))
    expected = (1 + np.sum(np.array(null) >= observed - 1e-12)) / (1 + n_permutations)
    ranking = rank_variables(
        v[:, None], labels, proba, n_permutations=n_permutations, random_state=seed
    )
    assert ranking["variable"].tolist() == ["x0"]
    assert ranking["p_value"].iloc[0] == pytest.approx(expected)


def test_large_nulls_are_drawn_in_seeded_chunks_on_every_core(monkeypatch) -> None:
    """From PARALLEL_MIN_ROWS rows (lowered here) the null is chunks of permutations, chunk c
    shuffled by numpy with the c-th stream spawned from the seed, whatever the cores."""
    from calibcore.variable import _permutation

    monkeypatch.setattr(_permutation, "PARALLEL_MIN_ROWS", 100)
    rng = np.random.default_rng(4)
    residual = rng.normal(size=300)
    sizes = np.array([100, 120, 80])
    starts = np.array([0, 100, 220])
    expected = []
    for count, stream in zip([25, 25, 10], np.random.SeedSequence(7).spawn(3), strict=True):
        shuffler, shuffled = np.random.default_rng(stream), residual.copy()
        for _ in range(count):
            shuffler.shuffle(shuffled)
            expected.append(np.abs(np.add.reduceat(shuffled, starts)).sum() / residual.size)
    drawn = []
    null = _permutation.permuted_vece(residual, sizes, 60, 7, lambda: drawn.append(1))
    np.testing.assert_allclose(null, expected, rtol=1e-12)
    assert len(drawn) == 60
    monkeypatch.setattr(_permutation.os, "cpu_count", lambda: 1)
    np.testing.assert_array_equal(_permutation.permuted_vece(residual, sizes, 60, 7), null)


def test_rank_variables_edge_cases():
    rng = np.random.default_rng(9)
    labels, proba = random_predictions(rng, 40)
    features = pd.DataFrame(
        {"empty": np.full(40, np.nan), "few": np.r_[np.arange(4.0), [np.nan] * 36]}
    )
    features["tiny"] = np.r_[rng.normal(size=3), [np.nan] * 37]
    ranking = rank_variables(features, labels, proba, max_categories=2).set_index("variable")
    assert ranking.index[-1] == "empty" and np.isnan(ranking.loc["empty", "vece"])
    assert ranking.loc["empty", "n"] == 0 and ranking.loc["empty", "n_missing"] == 40
    assert np.isnan(ranking.loc["tiny", "vce_max"])  # floor(3 rows * 0.8) < 4 neighbours
    with pytest.raises(CalibrationInputError, match="rows"):
        rank_variables(features.iloc[:10], labels, proba)
    with pytest.raises(CalibrationInputError, match="2-D"):
        rank_variables(np.zeros(40), labels, proba)


def test_default_credit_naive_bayes():
    """Naive Bayes assumes student and income independent (correlation -0.75 here):
    the ranking flags both and not balance, and the errors go opposite ways."""
    data = pd.read_csv(DATA)
    ranking = rank_variables(data[["student", "balance", "income"]], data.y_true, data.y_prob)
    rows = ranking.set_index("variable")
    assert set(ranking["variable"].iloc[:2]) == {"income", "student"}
    assert rows.loc["student", "kind"] == "categorical"
    assert rows.loc["income", "p_value"] < 0.01 and rows.loc["student", "p_value"] < 0.01
    assert rows.loc["balance", "p_value"] > 0.05
    students = variable_bins(data.student, data.y_true, data.y_prob, kind="categorical")
    assert np.sign(students["gap"]).tolist() == [1.0, -1.0]  # students: under-confident
    curves = loess_curves(data.income, data.y_true, data.y_prob)
    assert not curves.exact and curves.n == 7000
    # low incomes (mostly students): the predicted error sits above the error's band
    assert curves.predicted_error[0] > curves.error_high[0]
    assert curves.predicted_error[-1] < curves.error[-1]


def _sentinel(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    v = np.where(rng.uniform(size=n) < 0.1, 999.0, rng.uniform(0, 60, n))
    p = rng.uniform(0.5, 0.99, n)
    return v, (rng.uniform(size=n) < p).astype(int), np.column_stack([1 - p, p])


@pytest.mark.parametrize("span", [0.8, 0.3, 0.1])
def test_a_sentinel_value_leaves_a_gap_in_the_curves_not_an_extrapolation(span):
    """10% of V at a sentinel 999, the rest in [0, 60] (a calibrated model): LOESS
    extrapolated error rates of 3 (span 0.8), 130 (0.3) and 2,970 (0.1) into the gap, with
    VCE(v*) of 6.5 to 1,825 there. Points whose fit is less certain than one row
    (||l||^2 > 1) are left out, and the ranking's gap-only fit finds the same VCE(v*)."""
    v, y, proba = _sentinel(20_000, seed=1)
    curves = loess_curves(v, y, proba, span=span)
    drawn = ~np.isnan(curves.error)
    assert drawn[curves.x <= 60].all() and not drawn.all()
    for field in ("error_low", "error_high", "predicted_error", "predicted_error_high"):
        np.testing.assert_array_equal(np.isnan(getattr(curves, field)), ~drawn)
    assert np.nanmax(np.abs(curves.error)) < 1.0 and curves.vce_max < 0.5
    gap = np.abs(curves.error - curves.predicted_error)
    assert curves.vce_max == np.nanmax(gap)
    ranked = rank_variables(pd.DataFrame({"v": v}), y, proba, span=span, n_permutations=0)
    assert ranked.loc[0, "vce_max"] == pytest.approx(curves.vce_max, rel=1e-6)
    assert ranked.loc[0, "v_star"] == curves.v_star


@pytest.mark.slow
@pytest.mark.parametrize("span", [0.8, 0.3, 0.1, 0.02])
def test_integer_variables_with_long_ties_are_drawn_whole(span):
    """Between the values of an integer variable the windows end on ties and hold rows of
    one value only, but thousands of them: the fit is certain, nothing is left out."""
    rng = np.random.default_rng(0)
    n = 30_000
    p = rng.uniform(0.5, 0.99, n)
    y = (rng.uniform(size=n) < p).astype(int)
    for v in (rng.integers(0, 24, n).astype(float), rng.poisson(3, n).astype(float)):
        curves = loess_curves(v, y, p, span=span)
        assert not np.isnan(curves.error).any() and np.isfinite(curves.vce_max)


def test_positive_view_follows_p_class_1_along_the_variable():
    """The positive-view counterpart: VECE and both curves of 1[y != 1] and 1 - P(class 1)
    (by hand, brute force), and it finds a P(class 1) that runs high where the top-label
    view folds it away."""
    rng = np.random.default_rng(12)
    n = 160
    v = rng.uniform(18, 80, n)
    p = rng.beta(2, 2, n)
    labels = (rng.random(n) < p**1.3).astype(int)
    proba = np.column_stack([1 - p, p])
    frame = pd.DataFrame({"v": v, "predicted": 1 - p, "actual": (labels != 1).astype(float)})
    frame["bin"] = pd.qcut(frame["v"], 10, duplicates="drop")
    by_hand = sum(len(g) / n * abs(g["predicted"].mean() - g["actual"].mean())
                  for _, g in frame.groupby("bin", observed=True))
    assert variable_ece(v, labels, proba, view="positive") == pytest.approx(by_hand, rel=1e-12)
    curves = loess_curves(v, labels, proba, span=0.6, n_points=25, view="positive")
    points = np.linspace(*np.quantile(v, [0.05, 0.95]), 25)
    for target, series in (("error", frame["actual"].to_numpy()),
                           ("predicted_error", frame["predicted"].to_numpy())):
        fit, low, high = reference_curve(v, series, points, 0.6)
        np.testing.assert_allclose(getattr(curves, target), fit, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(getattr(curves, f"{target}_low"), low, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(getattr(curves, f"{target}_high"), high, rtol=1e-8,
                                   atol=1e-12)
    # 5,000 rows: the positive view sees the planted 0.08, the folded top label about 0.01
    n = 5_000
    v, p = rng.uniform(18, 80, n), rng.beta(2, 2, n)
    labels = (rng.random(n) < p**1.3).astype(int)
    assert variable_ece(v, labels, p, view="positive") > 0.06
    assert variable_ece(v, labels, p) < 0.035
    ranking = rank_variables(pd.DataFrame({"v": v}), labels, p, n_permutations=0,
                             view="positive")
    assert ranking["vece"].iloc[0] == pytest.approx(
        variable_ece(v, labels, p, view="positive"), rel=1e-12)
    with pytest.raises(CalibrationInputError, match="binary"):
        variable_ece(v[:30], np.arange(30) % 3, np.full((30, 3), 1 / 3), view="positive")
