"""Weighted partition summaries: the measures of merged weighted summaries equal the
in-memory weighted measures of all rows (``sample_weight``), integer weights equal the
rows repeated by them, unit weights equal no weights, and merges do not depend on the
order of the parts (empty parts included)."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import binned_reliability, calibration_tests_by_view, global_measures
from calibcore.partitioned import (
    FROM_SCORES,
    BinnedSummary,
    CellSummary,
    ScoreSummary,
    calibration_tests_of_scores,
    measures_with_intervals,
    merge_all,
    partitioned_equal_mass,
    partitioned_summaries,
    partitioned_summary,
)

#: Measures a weighted BinnedSummary gives, exact up to the order of additions.
BINNED = ("ece", "mce", "classwise_ece", "brier", "nll", "accuracy", "binned_ece_plus_width")


def rows(n_rows: int, n_classes: int, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray]:
    """Miscalibrated probabilities (Dirichlet, labels drawn from their squares) with a
    few scores repeated, so the score summaries group rows."""
    proba = rng.dirichlet(np.full(n_classes, 0.8), size=n_rows)
    proba[: n_rows // 4] = np.round(proba[: n_rows // 4], 2)
    proba[: n_rows // 4] /= proba[: n_rows // 4].sum(axis=1, keepdims=True)
    sharp = np.square(proba) / np.square(proba).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(n_classes, p=p) for p in sharp])
    return labels, proba


def summaries(labels: np.ndarray, proba: np.ndarray, weights: np.ndarray | None,
              parts: list[np.ndarray], view: str
              ) -> tuple[BinnedSummary, ScoreSummary, CellSummary]:
    def of(index: np.ndarray) -> tuple[BinnedSummary, ScoreSummary, CellSummary]:
        w = None if weights is None else weights[index]
        if index.size == 0:
            k = proba.shape[1] if proba.ndim == 2 else 2
            return (BinnedSummary.empty(k, weighted=w is not None),
                    ScoreSummary.empty(view, weighted=w is not None),  # type: ignore[arg-type]
                    CellSummary.empty(k, weighted=w is not None))
        return (BinnedSummary.of(labels[index], proba[index], sample_weight=w),
                ScoreSummary.of(labels[index], proba[index], view=view,  # type: ignore[arg-type]
                                sample_weight=w),
                CellSummary.of(labels[index], proba[index], sample_weight=w))

    each = [of(index) for index in parts]
    return (merge_all(b for b, _, _ in each),
            _merge(ScoreSummary.merge, [s for _, s, _ in each]),
            _merge(CellSummary.merge, [c for _, _, c in each]))


def _merge(merge, items):  # type: ignore[no-untyped-def]
    out = items[0]
    for item in items[1:]:
        out = merge(out, item)
    return out


@pytest.mark.parametrize(("n_classes", "view", "kind"),
                         [(2, "positive", "integer"), (2, "top_label", "fractional"),
                          (3, "top_label", "fractional")])
def test_weighted_summaries_equal_the_in_memory_weighted_measures(
        n_classes: int, view: str, kind: str) -> None:
    rng = np.random.default_rng(11)
    labels, proba = rows(900, n_classes, rng)
    weights = (rng.integers(0, 5, 900).astype(float) if kind == "integer"
               else rng.gamma(0.7, 2.0, 900))
    parts = np.split(rng.permutation(900), [0, 200, 200, 610])  # two empty parts
    binned, scores, _ = summaries(labels, proba, weights, parts, view)
    expected = global_measures(labels, proba, view=view, n_bootstrap=0,  # type: ignore[arg-type]
                               sample_weight=weights)
    got = {**binned.measures(view), **scores.measures()}  # type: ignore[arg-type]
    keys = [*BINNED, *(("binary_brier",) if n_classes == 2 else ()), *FROM_SCORES]
    for key in keys:
        assert got[key] == pytest.approx(expected[key].value, abs=1e-9), key
    # Kish's n by hand
    assert binned.n_eff == pytest.approx(weights.sum() ** 2 / np.sum(weights**2), rel=1e-12)
    assert binned.n_rows == 900 and binned.total == pytest.approx(weights.sum(), rel=1e-12)
    # the diagram: weighted means and Kish sizes, as binned_reliability gives them
    (diagram,) = binned.diagrams(view=view)  # type: ignore[arg-type]
    (reference,) = binned_reliability(labels, proba, view=view,  # type: ignore[arg-type]
                                      sample_weight=weights)
    np.testing.assert_array_equal(diagram.count, reference.count)
    for field in ("mean_score", "observed", "observed_low", "observed_high"):
        np.testing.assert_allclose(getattr(diagram, field), getattr(reference, field),
                                   atol=1e-12, err_msg=field)


def test_integer_weights_give_the_repeated_rows() -> None:
    rng = np.random.default_rng(5)
    labels, proba = rows(700, 2, rng)
    weights = rng.integers(0, 4, 700)
    repeat = np.repeat(np.arange(700), weights)
    parts = np.array_split(np.arange(700), 3)
    weighted, weighted_scores, _ = summaries(labels, proba, weights.astype(float), parts,
                                             "positive")
    plain, plain_scores, _ = summaries(labels[repeat], proba[repeat], None,
                                       np.array_split(np.arange(repeat.size), 4), "positive")
    for view in ("positive", "top_label"):
        plain_values = plain.measures(view)  # type: ignore[arg-type]
        for key, value in weighted.measures(view).items():  # type: ignore[arg-type]
            assert value == pytest.approx(plain_values[key], abs=1e-12), (view, key)
    for key, value in weighted_scores.measures().items():
        assert value == pytest.approx(plain_scores.measures()[key], abs=1e-12), key
    # weight per bin and per score = rows repeated there
    np.testing.assert_allclose(weighted.classwise[:, :3], plain.classwise, atol=1e-9)
    np.testing.assert_allclose(weighted_scores.sums["rows"].to_numpy()[
        weighted_scores.sums["rows"].to_numpy() > 0], plain_scores.sums["rows"].to_numpy())


def test_unit_weights_give_the_unweighted_summary() -> None:
    rng = np.random.default_rng(8)
    labels, proba = rows(600, 3, rng)
    parts = np.array_split(np.arange(600), 3)
    weighted, weighted_scores, weighted_cells = summaries(labels, proba, np.ones(600), parts,
                                                          "top_label")
    plain, plain_scores, plain_cells = summaries(labels, proba, None, parts, "top_label")
    assert plain.weights is None and weighted.n_eff == pytest.approx(600.0, rel=1e-12)
    assert weighted.measures() == pytest.approx(plain.measures(), abs=1e-12)
    assert weighted_scores.measures() == pytest.approx(plain_scores.measures(), abs=1e-12)
    keys = ["ece", "brier", "nll", "accuracy"]
    values = {key: plain.measures()[key] for key in keys}
    a = weighted_cells.measures(values, keys, n_bootstrap=40)  # type: ignore[arg-type]
    b = plain_cells.measures(values, keys, n_bootstrap=40)  # type: ignore[arg-type]
    for key in keys:  # the same cells, the same draws: the same intervals
        assert (a[key].low, a[key].high) == pytest.approx((b[key].low, b[key].high),
                                                          abs=1e-12), key
    assert a.n_eff == pytest.approx(600.0) and b.n_eff is None


@pytest.mark.slow
@seed(20261127)
@settings(max_examples=40, deadline=None)
@given(n_rows=st.integers(1, 250), n_cuts=st.integers(0, 6), order_seed=st.integers(0, 1000),
       integer=st.booleans())
def test_merge_order_does_not_matter(n_rows: int, n_cuts: int, order_seed: int,
                                     integer: bool) -> None:
    rng = np.random.default_rng(order_seed)
    labels, proba = rows(n_rows, 2, rng)
    weights = (rng.integers(0, 3, n_rows).astype(float) if integer
               else rng.exponential(1.0, n_rows))
    # cuts at 0 and n_rows included: empty parts at either end and between
    cuts = np.sort(np.concatenate([[0, n_rows], rng.integers(0, n_rows + 1, n_cuts)]))
    parts = np.split(np.arange(n_rows), cuts)
    shuffled = [parts[i] for i in rng.permutation(len(parts))]
    first, first_scores, first_cells = summaries(labels, proba, weights, parts, "positive")
    second, second_scores, second_cells = summaries(labels, proba, weights, shuffled,
                                                    "positive")
    assert first.n_rows == second.n_rows == n_rows
    np.testing.assert_allclose(first.top_label, second.top_label, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(first.classwise, second.classwise, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(first.losses, second.losses, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(first.weights, second.weights, rtol=1e-12)  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(first_scores.sums, second_scores.sums, rtol=1e-12)
    pd.testing.assert_frame_equal(first_cells.sums, second_cells.sums, rtol=1e-12)
    # the sums of all rows, by hand
    assert first.weights[0] == pytest.approx(weights.sum(), rel=1e-12)  # type: ignore[index]
    assert first_scores.sums["count"].sum() == n_rows


@pytest.fixture(scope="module")
def table() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(3)
    labels, proba = rows(2_000, 2, rng)
    weights = rng.integers(1, 6, 2_000).astype(float)
    frame = pd.DataFrame({"y": labels, "p": proba[:, 1], "w": weights,
                          "unused": rng.normal(size=2_000)})
    return frame, weights


def test_dask_summaries_take_the_weight_column_and_the_negative_rate(table) -> None:  # type: ignore[no-untyped-def]
    frame, weights = table
    parts = dd.from_pandas(frame, npartitions=5)
    labels, positive = frame["y"].to_numpy(), frame["p"].to_numpy()
    with dask.config.set(scheduler="sync"):
        for rate, expected_weights in ((None, weights),
                                       (0.25, weights * np.where(labels == 0, 4.0, 1.0))):
            summary, cells, scores = partitioned_summaries(
                parts, "y", ["p"], ["0", "1"], views=("positive",), weight="w",
                negative_rate=rate)
            result = measures_with_intervals(summary, cells, scores["positive"],
                                             view="positive", n_bootstrap=0)
            expected = global_measures(labels, positive, view="positive", n_bootstrap=0,
                                       sample_weight=expected_weights)
            for key in (*BINNED, "binary_brier", *FROM_SCORES):
                assert result[key].value == pytest.approx(expected[key].value,
                                                          abs=1e-9), (rate, key)
            assert result.n_eff == pytest.approx(expected.n_eff, rel=1e-12)
            alone = partitioned_summary(parts, "y", ["p"], ["0", "1"], weight="w",
                                        negative_rate=rate)
            assert alone.measures("positive") == pytest.approx(summary.measures("positive"),
                                                               abs=1e-12)
        plain, _, _ = partitioned_summaries(parts, "y", ["p"], ["0", "1"])
    assert plain.weights is None


def test_weighted_intervals_resample_the_cells_as_in_memory() -> None:
    """Above 20,000 rows the in-memory bootstrap resamples cells, each drawn row carrying
    its cell's mean weight: the merged weighted cells give the same intervals."""
    rng = np.random.default_rng(21)
    n = 24_000
    positive = rng.beta(2, 3, n)
    labels = (rng.random(n) < positive**1.2).astype(int)
    weights = np.where(labels == 0, 3.0, 1.0)  # one weight per label: cells of equal weights
    parts = np.array_split(np.arange(n), 3)
    binned, scores, cells = summaries(labels, positive, weights, parts, "positive")
    result = measures_with_intervals(binned, cells, scores, view="positive", n_bootstrap=30)
    expected = global_measures(labels, positive, view="positive", n_bootstrap=30,
                               interval="hybrid", sample_weight=weights,
                               measures=["ece", "brier", "nll", "accuracy"])
    for key in ("ece", "brier", "nll", "accuracy"):
        assert (result[key].low, result[key].high) == pytest.approx(
            (expected[key].low, expected[key].high), abs=1e-9), key


def test_bad_weights_and_mixed_summaries_are_refused(table) -> None:  # type: ignore[no-untyped-def]
    frame, _ = table
    bad = frame.assign(w=frame["w"].where(frame.index != 7, -1.0))
    with dask.config.set(scheduler="sync"):
        with pytest.raises(CalibrationInputError, match="'w' \\(weight\\) has negative"):
            partitioned_summaries(dd.from_pandas(bad, npartitions=2), "y", ["p"], ["0", "1"],
                                  weight="w")
        with pytest.raises(CalibrationInputError, match="no column named 'nope'"):
            partitioned_summaries(dd.from_pandas(frame, npartitions=2), "y", ["p"],
                                  ["0", "1"], weight="nope")
        with pytest.raises(CalibrationInputError, match="negative_rate"):
            partitioned_summaries(dd.from_pandas(frame, npartitions=2), "y", ["p"],
                                  ["0", "1"], negative_rate=1.5)
    labels, proba = frame["y"].to_numpy()[:10], frame["p"].to_numpy()[:10]
    with pytest.raises(CalibrationInputError, match="weighted with unweighted"):
        BinnedSummary.of(labels, proba).merge(BinnedSummary.of(labels, proba,
                                                               sample_weight=np.ones(10)))
    with pytest.raises(CalibrationInputError, match="weighted and unweighted"):
        ScoreSummary.of(labels, proba).merge(ScoreSummary.of(labels, proba,
                                                             sample_weight=np.ones(10)))


@pytest.mark.parametrize("kind", ["per_label", "fractional"])
def test_the_weighted_test_is_the_in_memory_one_above_the_sorting_size(kind: str) -> None:
    """Above 8,192 rows the in-memory weighted test pools rows into cells of the score on
    their Kish sizes; the merged weighted score sums give the same groups, hence the same
    statistic and p-values for the same seeds (headline and top-label check)."""
    rng = np.random.default_rng(1)
    n = 12_000
    positive = np.round(rng.beta(2, 2, n), 3)
    labels = (rng.random(n) < positive**1.1).astype(int)
    weights = np.where(labels == 0, 4.0, 1.0) if kind == "per_label" else rng.gamma(1.0, 1.0, n)
    parts = np.split(np.arange(n), [0, 5_000, 9_000])
    scores = {view: summaries(labels, positive, weights, parts, view)[1]
              for view in ("positive", "top_label")}
    got = calibration_tests_of_scores(scores, 2, n_resamples=50)  # type: ignore[arg-type]
    expected = calibration_tests_by_view(labels, positive, n_resamples=50,
                                         sample_weight=weights)
    assert not isinstance(got, str)
    assert got.headline.statistic == pytest.approx(expected.headline.statistic, rel=1e-12)
    assert got.headline.p_value == expected.headline.p_value
    assert got.others[0].p_value == expected.others[0].p_value


@pytest.mark.parametrize(("n_classes", "kind"),
                         [(2, "integer"), (2, "fractional"), (3, "integer"), (3, "fractional")])
def test_weighted_equal_mass_bins_are_at_the_weighted_quantiles(n_classes: int,
                                                                kind: str) -> None:
    """The three passes sum weights where they counted rows: ECE, MCE and classwise ECE
    at the weighted quantiles of every row equal global_measures(binning="equal_mass",
    sample_weight=...), and integer weights give the repeated rows' bins."""
    rng = np.random.default_rng(17)
    n = 3_000
    labels, proba = rows(n, n_classes, rng)
    weights = (rng.integers(0, 4, n).astype(float) if kind == "integer"
               else rng.gamma(0.7, 2.0, n))
    columns = [f"p{k}" for k in range(n_classes)] if n_classes > 2 else ["p1"]
    values = proba if n_classes > 2 else proba[:, 1:]
    frame = pd.DataFrame({"y": labels, **dict(zip(columns, values.T, strict=True)),
                          "w": weights})
    classes = [str(k) for k in range(n_classes)]
    keys = ["ece", "mce", "classwise_ece"]
    with dask.config.set(scheduler="sync"):
        got = partitioned_equal_mass(dd.from_pandas(frame, npartitions=4), "y", columns,
                                     classes, weight="w")
        if kind == "integer":
            repeated = frame.loc[frame.index.repeat(weights.astype(int))].drop(columns="w")
            plain = partitioned_equal_mass(dd.from_pandas(repeated, npartitions=3), "y",
                                           columns, classes)
            for key in keys:
                assert got[key] == pytest.approx(plain[key], abs=1e-12), key
            assert got["edges"] == plain["edges"]
    expected = global_measures(labels, proba, binning="equal_mass", n_bootstrap=0,
                               sample_weight=weights, measures=keys)  # type: ignore[arg-type]
    for key in keys:
        assert got[key] == pytest.approx(expected[key].value, abs=1e-9), key
    assert got["n_rows"] == pytest.approx(weights.sum(), rel=1e-12)
    if n_classes == 2:
        positive = global_measures(labels, proba, view="positive", binning="equal_mass",
                                   n_bootstrap=0, sample_weight=weights,
                                   measures=["ece", "mce"])
        for key in ("ece", "mce"):
            assert got["views"]["positive"][key] == pytest.approx(positive[key].value,
                                                                  abs=1e-9), key
