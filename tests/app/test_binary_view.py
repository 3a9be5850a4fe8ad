"""A binary file opens in the positive-class view everywhere, and the verdict is checked in
the top-label view.

The planted file: the model says p ~ Beta(2, 2) while the outcome happens with
probability p^1.3 (P(y = 1) runs high, by about 0.08), or, mirrored, 1 - (1 - p)^1.3
(it runs low). In the top-label view rows predicted positive (over-confident) and
predicted negative (under-confident) share a confidence and their errors cancel, so its
ECE is near 0.01; in the positive view the whole 0.08 shows.
"""

from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from app.services.report import build_report

N_ROWS = 5_000
#: Both directions of the planted gap. Each end-to-end check takes seconds (5,000 rows,
#: intervals, jobs): the fast tier runs one direction, the whole suite both.
MIRRORS = [pytest.param(False, id="over-predicts"),
           pytest.param(True, id="under-predicts", marks=pytest.mark.slow)]


def planted_gap(mirror: bool) -> float:
    """E|p - P(y = 1 | p)| under p ~ Beta(2, 2), by numerical integration."""
    def truth(p: float) -> float:
        return 1 - (1 - p) ** 1.3 if mirror else p**1.3

    value, _ = integrate.quad(lambda p: abs(p - truth(p)) * stats.beta(2, 2).pdf(p), 0, 1)
    return value


def planted_frame(mirror: bool, seed: int = 11, n: int = N_ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    truth = 1 - (1 - p) ** 1.3 if mirror else p**1.3
    y = (rng.random(n) < truth).astype(int)
    days = pd.Timestamp("2026-01-05") + pd.to_timedelta(rng.integers(0, 70, n), unit="D")
    return pd.DataFrame({"y_true": y, "y_prob": p, "age": rng.normal(40, 10, n).round(1),
                         "region": rng.choice(["north", "south", "east"], n),
                         "date": days.strftime("%Y-%m-%d")})


def upload_frame(client, frame: pd.DataFrame, **form: str) -> dict:  # type: ignore[no-untyped-def]
    buffer = io.BytesIO()
    frame.to_csv(buffer, index=False)
    response = client.post("/api/v1/datasets", files={"file": ("planted.csv", buffer.getvalue())},
                           data=form)
    assert response.status_code == 201, response.text
    return response.json()


def finished(client, job_id: str) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 120
    while (job := client.get(f"/api/v1/jobs/{job_id}").json())["status"] in ("queued",
                                                                             "running"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert job["status"] == "succeeded", job
    return job["result"]


@pytest.mark.slow
@pytest.mark.parametrize("mirror", MIRRORS)
def test_the_overview_finds_planted_miscalibration_by_default(client, mirror: bool) -> None:
    frame = planted_frame(mirror)
    dataset = upload_frame(client, frame)
    body = client.get(f"/api/v1/datasets/{dataset['id']}/metrics").json()
    assert body["view"] == "positive"
    y, p = frame["y_true"].to_numpy(), frame["y_prob"].to_numpy()
    edges = np.linspace(0, 1, 16)
    bins = np.clip(np.digitize(p, edges[1:-1]), 0, 14)
    by_hand = sum(abs(p[bins == b].mean() - y[bins == b].mean()) * (bins == b).mean()
                  for b in range(15) if (bins == b).any())
    assert body["metrics"]["ece"] == pytest.approx(by_hand, abs=1e-12)
    assert body["metrics"]["ece"] == pytest.approx(planted_gap(mirror), abs=0.02)
    test = body["calibration_test"]
    assert test["view"] == "positive" and test["rejected"] and test["p_value"] <= 0.05
    assert "positive-class view" in test["summary"]
    (other,) = test["other_views"]
    assert other["view"] == "top_label"
    assert test["views_disagree"] == (not other["rejected"])
    if test["views_disagree"]:
        assert "cancel" in test["disagreement"] and test["disagreement"] in test["summary"]
    top = client.get(f"/api/v1/datasets/{dataset['id']}/metrics",
                     params={"view": "top_label"}).json()
    assert top["view"] == "top_label" and top["metrics"]["ece"] < 0.03
    # the verdict is not read from the folded view when that view is shown
    assert top["calibration_test"]["view"] == "positive" and top["calibration_test"]["rejected"]
    diagram = client.get(f"/api/v1/datasets/{dataset['id']}/reliability").json()
    assert diagram["view"] == "positive"


@pytest.mark.slow
def test_the_folded_view_disagrees_and_the_summary_says_why(client) -> None:
    """A seed at which the top-label test finds nothing: the headline still rejects and
    says why the views differ."""
    for seed in range(11, 60):
        frame = planted_frame(False, seed=seed, n=2_000)
        dataset = upload_frame(client, frame)
        test = client.get(f"/api/v1/datasets/{dataset['id']}/metrics").json()[
            "calibration_test"]
        if not test["other_views"][0]["rejected"]:
            break
    else:
        pytest.fail("the top-label test rejected at every seed")
    assert test["rejected"] and test["views_disagree"]
    assert "top-label view finds no evidence" in test["summary"]
    assert "over-confident" in test["summary"] and "under-confident" in test["summary"]


def test_a_multiclass_file_keeps_the_top_label_view_with_classwise_beside(
        client, shared_data) -> None:
    dataset = upload_frame(client, pd.read_csv(shared_data / "digits_svm.csv"))
    body = client.get(f"/api/v1/datasets/{dataset['id']}/metrics").json()
    assert body["view"] == "top_label"
    test = body["calibration_test"]
    assert test["view"] == "top_label"
    (other,) = test["other_views"]
    assert other["view"] == "classwise" and "Bonferroni" in other["description"]
    assert 0 < other["p_value"] <= 1


@pytest.mark.slow
@pytest.mark.parametrize("mirror", MIRRORS)
def test_subgroups_and_timeline_find_the_planted_gap_by_default(client, mirror: bool) -> None:
    frame = planted_frame(mirror)
    dataset = upload_frame(client, frame, time="date")
    sign = -1.0 if mirror else 1.0
    started = client.post(f"/api/v1/datasets/{dataset['id']}/subgroups", json={})
    assert started.status_code == 202, started.text
    audit = finished(client, started.json()["job_id"])
    p, y = frame["y_prob"].to_numpy(), frame["y_true"].to_numpy()
    assert audit["view"] == "positive"
    assert audit["gap"] == pytest.approx(p.mean() - y.mean(), abs=1e-12)
    assert sign * audit["gap"] > 0.04
    worst = audit["subgroups"][0]
    assert "mean_confidence" not in worst and {"mean_score", "observed_rate"} <= set(worst)
    assert sign * worst["gap_low"] > 0  # the slice's interval excludes calibration
    timeline = client.get(f"/api/v1/datasets/{dataset['id']}/timeline").json()
    assert timeline["view"] == "positive"
    for window in timeline["windows"]:
        assert window["observed_rate_low"] <= window["observed_rate"] <= window[
            "observed_rate_high"]
        assert window["gap"] == pytest.approx(window["mean_score"] - window["observed_rate"])
    # each window of about 500 rows: the gap's standard error is about 0.02 around the
    # planted 0.077, so every window's gap is on the planted side (more than 3.5 standard
    # errors from 0) and their mean near the planted value
    assert all(sign * w["gap"] > 0 for w in timeline["windows"])
    assert np.mean([w["ece"] for w in timeline["windows"]]) > 0.05
    folded = client.get(f"/api/v1/datasets/{dataset['id']}/timeline",
                        params={"view": "top_label"}).json()
    assert folded["view"] == "top_label"
    assert abs(np.mean([w["gap"] for w in folded["windows"]])) < 0.02


@pytest.mark.slow
def test_compare_defaults_to_the_positive_view_for_two_classes(client) -> None:
    frame = planted_frame(False)
    frame = frame.rename(columns={"y_prob": "gbm_prob"}).assign(
        lr_prob=np.clip(frame["y_prob"] ** 1.3, 0, 1))
    dataset = upload_frame(client, frame)
    body = client.get(f"/api/v1/datasets/{dataset['id']}/compare",
                      params={"n_bootstrap": 50}).json()
    assert body["view"] == "positive"
    ece = {m["name"]: m["measures"]["ece"]["plug_in"] for m in body["models"]}
    assert ece["gbm"] > 0.05 and ece["lr"] < 0.03  # the second model is the calibrated one
    folded = client.get(f"/api/v1/datasets/{dataset['id']}/compare",
                        params={"n_bootstrap": 50, "view": "top_label"}).json()
    assert folded["view"] == "top_label"


@pytest.mark.parametrize("mirror", MIRRORS)
def test_the_report_finds_it_by_default(tmp_path, mirror: bool) -> None:
    path = tmp_path / "planted.csv"
    planted_frame(mirror).drop(columns=["date"]).to_csv(path, index=False)
    report = build_report(path, n_bootstrap=100)
    assert report["view"] == "positive" and report["metrics"]["view"] == "positive"
    assert report["metrics"]["calibration_test"]["rejected"]
    assert report["metrics"]["metrics"]["ece"] == pytest.approx(planted_gap(mirror), abs=0.02)


def test_variables_keep_the_papers_view_and_offer_the_positive_one(client) -> None:
    frame = planted_frame(False)
    dataset = upload_frame(client, frame)
    paper = client.get(f"/api/v1/datasets/{dataset['id']}/variables",
                       params={"n_permutations": 0, "async": "false"})
    positive = client.get(f"/api/v1/datasets/{dataset['id']}/variables",
                          params={"n_permutations": 0, "view": "positive"})
    assert paper.status_code == positive.status_code == 200, positive.text
    assert paper.json()["view"] == "top_label" and positive.json()["view"] == "positive"
    vece = {body["view"]: {row["variable"]: row["vece"] for row in body["variables"]}
            for body in (paper.json(), positive.json())}
    assert vece["positive"]["age"] > 0.06 > vece["top_label"]["age"]
    detail = client.get(f"/api/v1/datasets/{dataset['id']}/variables/age",
                        params={"view": "positive"}).json()
    assert detail["view"] == "positive" and detail["vece"] == pytest.approx(
        vece["positive"]["age"], rel=1e-12)
    refused = client.get(f"/api/v1/datasets/{dataset['id']}/variables/age",
                         params={"view": "classwise"})
    assert refused.status_code == 422


def test_bin_free_measures_come_from_the_measures_table_with_the_same_values(client) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=2.0, size=(400, 6))
    proba = np.round(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True), 8)
    frame = pd.DataFrame(proba / proba.sum(axis=1, keepdims=True),
                         columns=[f"p{k}" for k in range(6)])
    frame.insert(0, "y", [rng.choice(6, p=row) for row in frame.to_numpy()])
    first = upload_frame(client, frame)["id"]
    second = upload_frame(client, frame)["id"]
    # the first computes its bin-free measures itself; the second reads its measures table
    alone = client.get(f"/api/v1/datasets/{first}/metrics/bins",
                       params={"view": "classwise"}).json()["bin_free"]
    table = client.get(f"/api/v1/datasets/{second}/metrics",
                       params={"view": "classwise", "n_bootstrap": 0}).json()
    reused = client.get(f"/api/v1/datasets/{second}/metrics/bins",
                        params={"view": "classwise"}).json()["bin_free"]
    assert set(alone) == set(reused) == {"smooth_ece", "smooth_calibration_error",
                                         "interval_calibration_error"}
    for key, item in reused.items():
        assert item["value"] == alone[key]["value"] == table["metrics"][key]
