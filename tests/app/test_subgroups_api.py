"""The worst subgroups through REST: the job's result is the core's audit of
the stored rows, with diagrams; bad requests are refused before any job."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from calibcore.data import build_prediction_set, infer_roles
from calibcore.insights import worst_subgroups
from calibcore.metrics import binned_reliability
from tests.app.test_api import assert_error, upload


def finished(client, job_id: str) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 60
    while (job := client.get(f"/api/v1/jobs/{job_id}").json())["status"] in ("queued",
                                                                           "running"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return job


def test_subgroups_job_equals_the_core_on_the_stored_rows(client, shared_data) -> None:
    content = (shared_data / "default_nb.csv").read_bytes()
    dataset = upload(client, content).json()["id"]
    response = client.post(f"/api/v1/datasets/{dataset}/subgroups",
                           json={"subset": "test", "n_bins": 4})
    assert response.status_code == 202, response.text
    job = finished(client, response.json()["job_id"])
    assert job["status"] == "succeeded", job
    result = job["result"]

    frame = pd.read_csv(shared_data / "default_nb.csv")
    prediction_set = build_prediction_set(frame, infer_roles(frame).to_roles())
    rows = prediction_set.mask("test")
    features = prediction_set.features[rows].reset_index(drop=True)
    audit = worst_subgroups(features, prediction_set.y_true[rows], prediction_set.proba[rows],
                            kinds=prediction_set.feature_kinds, n_bins=4, view="positive")
    assert result["view"] == "positive"  # two classes: the gap of P(class 1)
    assert result["n_rows"] == int(rows.sum()) == 3474 and result["n_tried"] == audit.n_tried
    assert result["min_support"] == 100
    assert [s["slice"] for s in result["subgroups"]] == [
        s.describe() for s in audit.subgroups[:200]]
    for got, expected in zip(result["subgroups"], audit.subgroups, strict=False):
        assert got["gap"] == pytest.approx(expected.gap, rel=1e-12)
        assert got["p_adjusted"] == pytest.approx(expected.p_adjusted, rel=1e-12)
    worst = audit.subgroups[0]
    mask = worst.mask(features)
    (diagram,) = binned_reliability(prediction_set.y_true[rows][mask],
                                    prediction_set.proba[rows][mask], n_bins=10,
                                    view="positive")
    assert result["diagrams"][0]["count"] == diagram.count.tolist()
    assert sum(result["whole"]["count"]) == 3474
    assert len(result["diagrams"]) == min(50, len(result["subgroups"]))
    np.testing.assert_allclose(result["gap"], audit.gap)

    again = finished(client, client.post(f"/api/v1/datasets/{dataset}/subgroups", json={
        "subset": "test", "n_bins": 4}).json()["job_id"])
    assert again["message"] == "done" and again["result"] == result  # cached


def test_bad_subgroup_requests_are_refused(client, shared_data) -> None:
    frame = pd.read_csv(shared_data / "default_nb.csv").drop(columns="split")
    dataset = upload(client, frame.to_csv(index=False).encode()).json()["id"]
    url = f"/api/v1/datasets/{dataset}/subgroups"
    assert_error(client.post(url, json={"features": ["nope"]}), 409, "unknown_feature")
    assert_error(client.post(url, json={"subset": "test"}), 409, "no_split")
    assert_error(client.post(url, json={"n_bins": 1}), 422, "invalid_request")
    assert_error(client.post(url, json={"min_support": -3}), 422, "invalid_request")
    assert_error(client.post("/api/v1/datasets/ds_missing/subgroups", json={}), 404)
