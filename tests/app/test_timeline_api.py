"""Calibration over time: a planted shift is flagged at the shift and not
before; windows equal a by-hand grouping; the rolling recalibration is fitted on each
window and scored on the next."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibcore import metrics
from calibcore.insights import calibration_timeline
from calibcore.recalibration import TemperatureScaling
from tests.app.test_api import assert_error, upload

SHIFT_WEEK = 9


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment: (m - i + 1) p_(i), made monotone upwards, capped at 1."""
    m = p_values.size
    order = np.argsort(p_values)
    adjusted = np.empty(m)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def weekly(n_rows: int = 12_000, seed: int = 2) -> pd.DataFrame:
    """A calibrated binary model for 8 weeks, then over-confident from week 9 on."""
    rng = np.random.default_rng(seed)
    day = np.sort(rng.integers(0, 7 * 14, n_rows))
    date = pd.Timestamp("2026-03-02") + pd.to_timedelta(day, unit="D")  # a Monday
    positive = rng.uniform(0.05, 0.95, n_rows)
    truth = np.where(day >= 7 * (SHIFT_WEEK - 1), 0.5 + 0.5 * (positive - 0.5), positive)
    return pd.DataFrame({"date": date.strftime("%Y-%m-%d"), "y_true": (
        rng.random(n_rows) < truth).astype(int), "y_prob": positive.round(6),
        "x": rng.normal(size=n_rows)})


@pytest.mark.slow
def test_planted_shift_is_flagged_at_the_shift_and_not_before(client) -> None:
    frame = weekly()
    dataset = upload(client, frame.to_csv(index=False).encode()).json()
    assert dataset["roles"]["time"] == "date" and dataset["roles"]["features"] == ["x"]
    body = client.get(f"/api/v1/datasets/{dataset['id']}/timeline",
                      params={"freq": "W"}).json()
    assert body["period"] == "week" and body["time"] == "date"
    windows = body["windows"]
    assert len(windows) == 14
    flagged = [i for i, w in enumerate(windows) if w["flagged"]]
    assert flagged and min(flagged) == SHIFT_WEEK - 1  # the ninth week, index 8
    assert all(not w["flagged"] for w in windows[:SHIFT_WEEK - 1])
    assert "Welch" in body["test"]

    # the over-confidence is symmetric about 1/2: P(class 1) is right on average, so the
    # positive view's gap stays put and the top-label gap is the one that moved
    assert body["view"] == "positive"
    assert all(windows[i]["changed_views"] == ["top_label"] for i in flagged)

    # by hand: the week of each row, both views' gaps, Welch's test against week one, Holm
    # over the 2 x 13 tests
    week = (pd.to_datetime(frame["date"]) - pd.Timestamp("2026-03-02")).dt.days // 7
    confidence = np.maximum(frame["y_prob"], 1 - frame["y_prob"])
    residual = confidence - ((frame["y_prob"] > 0.5).astype(int) == frame["y_true"])
    positive = frame["y_prob"] - frame["y_true"]
    p_values = np.array([[stats.ttest_ind(r[week == i], r[week == 0], equal_var=False).pvalue
                          for i in range(1, 14)] for r in (positive, residual)])
    adjusted = holm(p_values.ravel()).reshape(2, 13)
    for i, window in enumerate(windows):
        assert window["n"] == int((week == i).sum())
        assert window["gap"] == pytest.approx(float(positive[week == i].mean()), abs=1e-12)
        assert window["mean_confidence"] - window["accuracy"] == pytest.approx(
            float(residual[week == i].mean()), abs=1e-12)
        assert window["ece_low"] <= window["ece"] <= window["ece_high"]
        assert window["smooth_ece_low"] <= window["smooth_ece"] <= window["smooth_ece_high"]
        if i:
            assert window["p_value"] == pytest.approx(p_values[:, i - 1].min(), rel=1e-9)
            assert window["p_adjusted"] == pytest.approx(adjusted[:, i - 1].min(), rel=1e-9)

    rolling = body["rolling"]["windows"]
    assert [r["window"] for r in rolling] == list(range(1, 14))
    fit, score = (week == 8).to_numpy(), (week == 9).to_numpy()
    model = TemperatureScaling().fit(frame["y_prob"].to_numpy()[fit],
                                     frame["y_true"].to_numpy()[fit])
    after = model.predict_proba(frame["y_prob"].to_numpy()[score])
    assert rolling[8]["nll_after"] == pytest.approx(
        metrics.negative_log_likelihood(frame["y_true"].to_numpy()[score], after), rel=1e-9)
    assert rolling[8]["nll_after"] < rolling[8]["nll_before"]  # last week's fit helps


@pytest.mark.slow
def test_ordered_numbers_and_refusals(client) -> None:
    rng = np.random.default_rng(1)
    times = np.arange(3_000) % 5
    positive = rng.uniform(0.1, 0.9, times.size)
    timeline = calibration_timeline(times, (rng.random(times.size) < positive).astype(int),
                                    positive)
    assert timeline.period == "value" and [w.label for w in timeline.windows] == [
        "0", "1", "2", "3", "4"]
    assert not any(w.flagged for w in timeline.windows)
    frame = weekly(2_000).drop(columns="date")
    dataset = upload(client, frame.to_csv(index=False).encode()).json()["id"]
    assert_error(client.get(f"/api/v1/datasets/{dataset}/timeline"), 409, "no_time")
    assert_error(client.get(f"/api/v1/datasets/{dataset}/timeline",
                            params={"time": "nope"}), 409, "unknown_column")
    assert_error(client.get(f"/api/v1/datasets/{dataset}/timeline",
                            params={"time": "x", "method": "lece"}), 422)
    body = client.get(f"/api/v1/datasets/{dataset}/timeline", params={"time": "x"}).json()
    assert body["period"] == "range" and len(body["windows"]) == 20
