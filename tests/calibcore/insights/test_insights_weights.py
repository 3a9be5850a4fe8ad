"""Row weights in the subgroup audit, the model comparison and the timeline: integer
weights give exactly the repeated rows' gaps, rates, binned measures, Brier, NLL and
accuracy; unit weights give the unweighted tests; the weighted standard errors are the
sandwich formula written out here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibcore.insights import calibration_timeline, compare_models, worst_subgroups


def _rows(n: int = 1500, seed: int = 5) -> tuple[pd.DataFrame, np.ndarray, np.ndarray,
                                                np.ndarray]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], n),
                          "shape": rng.choice(["round", "square"], n)})
    positive = rng.uniform(0.05, 0.95, n)
    truth = np.where(frame["colour"] == "red", 0.5 + 0.3 * (positive - 0.5), positive)
    labels = (rng.random(n) < truth).astype(int)
    weights = rng.integers(0, 4, n)
    weights[:3] = 1
    return frame, labels, positive, weights


def _repeat(frame: pd.DataFrame, weights: np.ndarray) -> pd.DataFrame:
    return frame.loc[frame.index.repeat(weights)].reset_index(drop=True)


def test_subgroup_gaps_of_integer_weights_are_the_repeated_rows() -> None:
    frame, labels, positive, weights = _rows()
    ours = worst_subgroups(frame, labels, positive, min_support=30, view="positive",
                           sample_weight=weights)
    theirs = worst_subgroups(_repeat(frame, weights), np.repeat(labels, weights),
                             np.repeat(positive, weights), min_support=30, view="positive")
    theirs_by_slice = {s.describe(): s for s in theirs.subgroups}
    assert ours.weighted and not theirs.weighted
    assert len(ours.subgroups) == len(theirs.subgroups) > 8
    for mine in ours.subgroups:
        other = theirs_by_slice[mine.describe()]
        for field in ("mean_score", "observed_rate", "gap", "other_gap"):
            assert getattr(mine, field) == pytest.approx(getattr(other, field), abs=1e-12)
        assert mine.smooth_ece == pytest.approx(other.smooth_ece, abs=1e-9)
        assert mine.weight == other.n
    assert ours.gap == pytest.approx(theirs.gap, abs=1e-12)


def test_subgroup_standard_error_is_the_sandwich_by_hand() -> None:
    frame, labels, positive, _ = _rows(900, seed=8)
    weights = np.random.default_rng(2).gamma(0.8, 2.0, labels.size)
    audit = worst_subgroups(frame, labels, positive, min_support=30, view="positive",
                            pairs=False, sample_weight=weights)
    residual = positive - labels
    for subgroup in audit.subgroups:
        rows = subgroup.mask(frame)
        w, r = weights[rows], residual[rows]
        gap = (w * r).sum() / w.sum()
        m = rows.sum()
        error = np.sqrt(m / (m - 1) * ((w * (r - gap)) ** 2).sum()) / w.sum()
        n_eff = w.sum() ** 2 / (w**2).sum()
        half = stats.t.ppf(0.975, n_eff - 1) * error
        assert subgroup.gap == pytest.approx(gap, abs=1e-12)
        assert subgroup.gap_high - subgroup.gap == pytest.approx(half, rel=1e-9)
        assert subgroup.n_eff == pytest.approx(n_eff, rel=1e-12)


def test_subgroup_unit_weights_give_the_unweighted_tests() -> None:
    frame, labels, positive, _ = _rows(800, seed=1)
    plain = worst_subgroups(frame, labels, positive, min_support=30, view="positive")
    ones = worst_subgroups(frame, labels, positive, min_support=30, view="positive",
                           sample_weight=np.ones(labels.size))
    for a, b in zip(plain.subgroups, ones.subgroups, strict=True):
        assert a.describe() == b.describe()
        assert (a.gap_low, a.gap_high, a.p_value) == pytest.approx(
            (b.gap_low, b.gap_high, b.p_value), rel=1e-9, abs=1e-12)


def test_model_comparison_of_integer_weights_is_the_repeated_rows() -> None:
    _, labels, positive, weights = _rows()
    models = {"a": positive, "b": np.clip(positive ** 1.4, 0.01, 0.99)}
    ours = compare_models(labels, models, view="positive", n_bootstrap=0,
                          sample_weight=weights)
    theirs = compare_models(np.repeat(labels, weights),
                            {k: np.repeat(v, weights) for k, v in models.items()},
                            view="positive", n_bootstrap=0)
    assert ours.n_eff == pytest.approx(weights.sum() ** 2 / (weights**2).sum())
    for mine, other in zip(ours.models, theirs.models, strict=True):
        for key in ("accuracy", "brier", "nll", "ece", "smooth_ece"):
            assert mine.measures[key].plug_in == pytest.approx(other.measures[key].plug_in,
                                                               abs=1e-9), key
        for a, b in zip(mine.differences, other.differences, strict=True):
            assert a.value == pytest.approx(b.value, abs=1e-9)


def test_model_comparison_resamples_carry_the_weights() -> None:
    _, labels, positive, weights = _rows(600, seed=3)
    models = {"a": positive, "b": np.clip(positive * 0.7 + 0.1, 0.01, 0.99)}
    result = compare_models(labels, models, view="positive", n_bootstrap=60,
                            sample_weight=weights, random_state=2)
    again = compare_models(labels, models, view="positive", n_bootstrap=60,
                           sample_weight=weights, random_state=2)
    difference = result.models[1].differences[0]
    assert difference.low <= difference.value <= difference.high
    assert difference.high > difference.low
    assert difference == again.models[1].differences[0]


def _dated(n: int = 1200, seed: int = 4) -> tuple[pd.Series, np.ndarray, np.ndarray,
                                                   np.ndarray]:
    rng = np.random.default_rng(seed)
    times = pd.Series(pd.Timestamp("2026-01-01")
                      + pd.to_timedelta(rng.integers(0, 120, n), unit="D"))
    positive = rng.uniform(0.05, 0.95, n)
    drift = (times >= pd.Timestamp("2026-03-01")).to_numpy()
    labels = (rng.random(n) < np.where(drift, positive * 0.7, positive)).astype(int)
    weights = rng.integers(0, 4, n)
    weights[:3] = 1
    return times, labels, positive, weights


@pytest.mark.slow
def test_timeline_windows_of_integer_weights_are_the_repeated_rows() -> None:
    times, labels, positive, weights = _dated()
    ours = calibration_timeline(times, labels, positive, freq="M", view="positive",
                                n_bootstrap=0, sample_weight=weights)
    theirs = calibration_timeline(times.repeat(weights).reset_index(drop=True),
                                  np.repeat(labels, weights), np.repeat(positive, weights),
                                  freq="M", view="positive", n_bootstrap=0)
    assert [w.label for w in ours.windows] == [w.label for w in theirs.windows]
    for index, (mine, other) in enumerate(zip(ours.windows, theirs.windows, strict=True)):
        for field in ("accuracy", "mean_confidence", "mean_score", "observed_rate", "gap",
                      "ece", "smooth_ece"):
            assert getattr(mine, field) == pytest.approx(getattr(other, field), abs=1e-9), field
        assert mine.weight == other.n
        window = weights[ours.assignments == index].astype(float)
        assert mine.n_eff == pytest.approx(window.sum() ** 2 / (window**2).sum(), rel=1e-12)
    assert any(w.flagged for w in ours.windows)


@pytest.mark.slow
def test_timeline_unit_weights_give_welch_and_wilson_unweighted() -> None:
    times, labels, positive, _ = _dated(900, seed=6)
    plain = calibration_timeline(times, labels, positive, freq="M", view="positive",
                                 n_bootstrap=0)
    ones = calibration_timeline(times, labels, positive, freq="M", view="positive",
                                n_bootstrap=0, sample_weight=np.ones(labels.size))
    for a, b in zip(plain.windows, ones.windows, strict=True):
        assert (a.p_value, a.observed_rate_low, a.observed_rate_high) == pytest.approx(
            (b.p_value, b.observed_rate_low, b.observed_rate_high), rel=1e-9, nan_ok=True)
        assert b.n_eff == pytest.approx(b.n)
