"""Models compared on the same rows through REST: inferred from the column
names, each model's measures equal the core's on its columns, differences paired."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibcore import metrics
from calibcore.insights import compare_models
from tests.app.test_api import assert_error, upload


def three_models_csv(n_rows: int = 4_000, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n_rows)
    truth = 1 / (1 + np.exp(-x))
    frame = pd.DataFrame({"y_true": (rng.random(n_rows) < truth).astype(int), "x": x})
    for name, scale in (("gbm", 1.0), ("lr", 1.7), ("nb", 0.6)):
        positive = 1 / (1 + np.exp(-scale * x))
        frame[f"{name}_proba_0"] = (1 - positive).round(6)
        frame[f"{name}_proba_1"] = 1 - frame[f"{name}_proba_0"]
    return frame


def test_models_are_inferred_and_compared(client) -> None:
    frame = three_models_csv()
    dataset = upload(client, frame.to_csv(index=False).encode()).json()
    roles = dataset["roles"]
    assert roles["probabilities"] == ["gbm_proba_0", "gbm_proba_1"]
    assert [name for name, _ in roles["models"]] == ["gbm", "lr", "nb"]
    assert roles["features"] == ["x"]
    body = client.get(f"/api/v1/datasets/{dataset['id']}/compare",
                      params={"reference": "lr", "n_bootstrap": 50}).json()
    assert body["reference"] == "lr" and body["n"] == 4_000
    assert body["view"] == "positive"  # two classes: P(class 1) against its frequency
    labels = frame["y_true"].to_numpy()
    probabilities = {name: frame[[f"{name}_proba_0", f"{name}_proba_1"]].to_numpy()
                     for name in ("gbm", "lr", "nb")}
    expected = compare_models(labels, probabilities, reference="lr", n_bootstrap=50,
                              view="positive")
    for got, model in zip(body["models"], expected.models, strict=True):
        assert got["name"] == model.name
        assert got["measures"]["ece"]["value"] == pytest.approx(model.measures["ece"].value)
        assert got["measures"]["nll"]["plug_in"] == pytest.approx(
            metrics.negative_log_likelihood(labels, probabilities[model.name]), rel=1e-12)
        for difference in model.differences:
            assert got["differences"][difference.key]["p_value"] == pytest.approx(
                difference.p_value)
        assert sum(got["reliability"]["count"]) == 4_000
    gbm = body["models"][0]["differences"]
    assert gbm["nll"]["value"] < 0 and gbm["nll"]["high"] < 0  # gbm is the true model
    assert body["models"][1]["differences"] == {}


def test_one_model_or_an_unknown_reference_is_refused(client, shared_data) -> None:
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    assert_error(client.get(f"/api/v1/datasets/{dataset}/compare"), 409, "no_models")
    frame = three_models_csv(500)
    other = upload(client, frame.to_csv(index=False).encode()).json()["id"]
    assert_error(client.get(f"/api/v1/datasets/{other}/compare",
                            params={"reference": "svm"}), 409, "unknown_model")


@pytest.mark.slow
def test_report_compares_the_models_of_a_file(tmp_path) -> None:
    """calibdash report on a file of three models: the comparison in the JSON (equal to
    the core's) and in the HTML page."""
    import json

    from app.cli import main

    frame = three_models_csv(1_500)
    path, out, page = tmp_path / "models.csv", tmp_path / "r.json", tmp_path / "r.html"
    frame.to_csv(path, index=False)
    assert main(["report", str(path), "--n-bootstrap", "30", "--out", str(out), "--html",
                 str(page)]) == 0
    report = json.loads(out.read_text())
    comparison = report["comparison"]
    assert [m["name"] for m in comparison["models"]] == ["gbm", "lr", "nb"]
    labels = frame["y_true"].to_numpy()
    expected = compare_models(labels, {name: frame[[f"{name}_proba_0", f"{name}_proba_1"]]
                                       .to_numpy() for name in ("gbm", "lr", "nb")},
                              n_bootstrap=30, view="positive")
    assert comparison["view"] == "positive"
    assert comparison["models"][2]["differences"]["ece"]["value"] == pytest.approx(
        expected.models[2].differences[3].value)
    text = page.read_text()
    assert "Models compared on the same rows" in text and "nb" in text


def test_models_can_be_regrouped_when_confirming_the_roles(client) -> None:
    """The roles a user confirms may name the models (or drop them): they are kept as
    given; one model alone, or probabilities outside the models, are refused."""
    frame = three_models_csv(600)
    staged = client.post("/api/v1/uploads", files={
        "file": ("m.csv", frame.to_csv(index=False).encode())}).json()
    assert [name for name, _ in staged["inferred"]["models"]] == ["gbm", "lr", "nb"]
    url = f"/api/v1/uploads/{staged['upload_id']}/confirm"
    assert_error(client.post(url, json={"models": {"gbm": ["gbm_proba_0", "gbm_proba_1"]}}),
                 422, "invalid_models")
    assert_error(client.post(url, json={
        "probabilities": ["lr_proba_0", "lr_proba_1"],
        "models": {"gbm": ["gbm_proba_0", "gbm_proba_1"],
                   "nb": ["nb_proba_0", "nb_proba_1"]}}), 422, "invalid_models")
    dataset = client.post(url, json={"models": {
        "boosted": ["gbm_proba_0", "gbm_proba_1"], "bayes": ["nb_proba_0", "nb_proba_1"]},
        "features": ["x"]}).json()
    assert dataset["roles"]["models"] == [["boosted", ["gbm_proba_0", "gbm_proba_1"]],
                                          ["bayes", ["nb_proba_0", "nb_proba_1"]]]
    assert dataset["roles"]["probabilities"] == ["gbm_proba_0", "gbm_proba_1"]
    body = client.get(f"/api/v1/datasets/{dataset['id']}/compare",
                      params={"n_bootstrap": 20}).json()
    assert [m["name"] for m in body["models"]] == ["boosted", "bayes"]
