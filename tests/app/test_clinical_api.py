"""The clinical report through REST: the response is the core's report of the stored rows
(class 1 of a binary file, one class against the rest of more), the one-page HTML report
is self-contained, and bad requests get the one error shape."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest

from calibcore.clinical import clinical_calibration
from tests.app.test_api import assert_error, upload


@pytest.fixture
def default_nb(shared_data) -> bytes:
    return (shared_data / "default_nb.csv").read_bytes()

KEYS = ("oe_ratio", "calibration_in_the_large", "calibration_intercept",
        "calibration_slope", "spiegelhalter_z", "spiegelhalter_p", "ici", "e50", "e90",
        "emax")


def test_binary_report_equals_the_core_on_the_stored_rows(client, default_nb) -> None:
    dataset = upload(client, default_nb).json()["id"]
    body = client.get(f"/api/v1/datasets/{dataset}/clinical").json()
    frame = pd.read_csv(io.BytesIO(default_nb))
    core = clinical_calibration(frame["y_true"], frame["y_prob"])
    assert body["target"] == "1" and body["classes"] == ["0", "1"] and body["n"] == 7000
    for key in KEYS:
        estimate = getattr(core, key)
        assert body[key]["value"] == pytest.approx(estimate.value, rel=1e-12), key
        if estimate.lower is None:  # no interval: the keys are absent
            assert set(body[key]) == {"value"}, key
        else:
            assert body[key]["lower"] == pytest.approx(estimate.lower, rel=1e-12), key
            assert body[key]["upper"] == pytest.approx(estimate.upper, rel=1e-12), key
    assert body["hosmer_lemeshow"]["value"] == pytest.approx(core.hosmer_lemeshow.value)
    assert "grouping" in body["hosmer_lemeshow"]["caveat"]
    assert [level["name"] for level in body["levels"]] == ["mean", "weak", "moderate"]
    assert body["verdict"] == core.verdict
    assert body["curve"]["predicted"] == pytest.approx(core.curve.predicted.tolist())
    assert sum(body["curve"]["histogram"]["counts"]) == 7000
    assert body["n_logistic"] == int(((frame["y_prob"] > 0) & (frame["y_prob"] < 1)).sum())

    test_rows = client.get(f"/api/v1/datasets/{dataset}/clinical",
                           params={"subset": "test"}).json()
    test = frame[frame["split"] == "test"]
    assert test_rows["n"] == len(test)
    assert test_rows["calibration_slope"]["value"] == pytest.approx(
        clinical_calibration(test["y_true"], test["y_prob"]).calibration_slope.value)


def test_the_one_page_report_is_self_contained(client, default_nb) -> None:
    dataset = upload(client, default_nb).json()["id"]
    response = client.get(f"/api/v1/datasets/{dataset}/clinical/report.html")
    assert response.status_code == 200 and response.headers["content-type"].startswith(
        "text/html")
    page = response.text
    body = client.get(f"/api/v1/datasets/{dataset}/clinical").json()
    assert "<svg" in page and "@media print" in page and body["verdict"][:60] in page
    assert "<script" not in page and not re.search(r"(src|href)=\"https?://", page)
    for label in ("Calibration slope", "Calibration-in-the-large", "E90", "Emax",
                  "Hosmer-Lemeshow", "Van Calster", "Austin", "Spiegelhalter"):
        assert label in page, label
    assert f"{body['calibration_slope']['value']:.3f}" in page


def test_one_class_against_the_rest(client, shared_data) -> None:
    content = (shared_data / "digits_svm.csv").read_bytes()
    dataset = upload(client, content).json()["id"]
    frame = pd.read_csv(shared_data / "digits_svm.csv")
    proba = frame[[f"proba_{k}" for k in range(10)]].to_numpy()
    labels = frame["label"].to_numpy()
    first = client.get(f"/api/v1/datasets/{dataset}/clinical").json()
    assert first["target"] == "0" and "against the rest" in first["problem"]
    body = client.get(f"/api/v1/datasets/{dataset}/clinical", params={"target": "3"}).json()
    core = clinical_calibration(labels, proba / proba.sum(axis=1, keepdims=True), target=3)
    assert body["target"] == "3" and body["n_events"] == int((labels == 3).sum())
    assert body["calibration_slope"]["value"] == pytest.approx(core.calibration_slope.value,
                                                               rel=1e-6)
    assert body["ici"]["value"] == pytest.approx(core.ici.value, rel=1e-6)


@pytest.mark.slow
def test_refusals(client, default_nb) -> None:
    dataset = upload(client, default_nb).json()["id"]
    assert_error(client.get("/api/v1/datasets/nope/clinical"), 404)
    assert_error(client.get(f"/api/v1/datasets/{dataset}/clinical",
                            params={"target": "maybe"}), 409, "unknown_class")
    assert_error(client.get(f"/api/v1/datasets/{dataset}/clinical",
                            params={"subset": "half"}), 422)
    assert_error(client.get(f"/api/v1/datasets/{dataset}/clinical/report.html",
                            params={"target": "maybe"}), 409, "unknown_class")
    rng = np.random.default_rng(0)
    no_split = pd.DataFrame({"y_true": rng.integers(0, 2, 300),
                             "y_prob": rng.uniform(0.1, 0.9, 300).round(4)})
    other = upload(client, no_split.to_csv(index=False).encode()).json()["id"]
    assert_error(client.get(f"/api/v1/datasets/{other}/clinical",
                            params={"subset": "test"}), 409, "no_split")
    constant = no_split.assign(y_prob=0.3)
    flat = upload(client, constant.to_csv(index=False).encode()).json()["id"]
    assert_error(client.get(f"/api/v1/datasets/{flat}/clinical"), 409,
                 "constant_probability")


def test_report_section(tmp_path) -> None:
    """``calibdash report``: the JSON key ``clinical`` and its drawing in the HTML."""
    from app.services.report import build_report
    from app.ui.report import render_html

    rng = np.random.default_rng(1)
    p = rng.uniform(0.05, 0.95, 600).round(5)
    path = tmp_path / "small.csv"
    pd.DataFrame({"y_true": (rng.random(600) < p).astype(int), "y_prob": p}).to_csv(
        path, index=False)
    report = build_report(path, n_bootstrap=0)
    (problem,) = report["clinical"]["problems"]
    core = clinical_calibration(pd.read_csv(path)["y_true"], pd.read_csv(path)["y_prob"])
    assert problem["calibration_slope"]["value"] == pytest.approx(
        core.calibration_slope.value)
    page = render_html(report)
    assert "<h2>Clinical calibration</h2>" in page and problem["verdict"][:50] in page
    assert page.index("Clinical calibration") < page.index("Variables ranked")
