"""Venn-Abers through REST and the CLI: the fit, the download's interval columns, the
interval width the page shows, and applying the saved recalibrator to new data."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from app.cli import main as cli_main
from app.services.methods import make_recalibrator
from app.services.recalibration_fitting import cross_fit
from calibcore.recalibration import Recalibrator, VennAbers
from tests.app.test_api import assert_error, upload
from tests.app.test_recalibration_api import download, fit

PROBABILITIES = ["calibrated_proba_0", "calibrated_proba_1"]
INTERVALS = ["p0_0", "p0_1", "p1_0", "p1_1"]


@pytest.fixture
def default_nb(shared_data) -> pd.DataFrame:
    return pd.read_csv(shared_data / "default_nb.csv")


def applied(client: Any, path: str, frame: pd.DataFrame) -> pd.DataFrame:
    response = client.post(path, files={"file": ("new.csv", frame.to_csv(index=False).encode())})
    assert response.status_code == 200, response.text
    return pd.read_csv(io.BytesIO(response.content))


def test_fit_download_and_width_equal_calibcores_venn_abers(client, default_nb) -> None:
    dataset = upload(client, default_nb.to_csv(index=False).encode(), "default_nb.csv")
    result = fit(client, dataset.json()["id"], method="venn_abers")
    assert result["method"] == "venn_abers" and result["cross_fitted"] is False
    assert result["params"] == {"cross_folds": 1, "multiclass": "one_vs_rest",
                                "random_state": 0}

    frame = download(client, result["id"])
    assert list(frame.columns) == [*default_nb.columns, *PROBABILITIES, *INTERVALS]
    calibration = (default_nb["split"] == "calibration").to_numpy()
    p = default_nb["y_prob"].to_numpy()
    model = VennAbers().fit(p[calibration], default_nb["y_true"].to_numpy()[calibration])
    lower, upper = model.predict_interval(p)
    np.testing.assert_allclose(frame[PROBABILITIES], model.predict_proba(p), rtol=0, atol=1e-12)
    np.testing.assert_allclose(frame[["p0_0", "p0_1"]], lower, rtol=0, atol=1e-12)
    np.testing.assert_allclose(frame[["p1_0", "p1_1"]], upper, rtol=0, atol=1e-12)
    for k in (0, 1):
        assert (frame[f"p0_{k}"] <= frame[f"calibrated_proba_{k}"] + 1e-12).all()
        assert (frame[f"calibrated_proba_{k}"] <= frame[f"p1_{k}"] + 1e-12).all()

    # the width the page shows: p1 - p0 on the test rows, the same for both classes
    test = ~calibration
    width = (frame["p1_1"] - frame["p0_1"])[test].mean()
    assert result["interval_width"] == pytest.approx(width, rel=1e-12)
    assert 0 < width < 0.05  # 3,500 calibration rows pin the probability down closely
    # the comparison scores the probabilities, not the interval columns
    compared = result["comparison"]["rows"][1]["values"]["nll"]["value"]
    assert compared == pytest.approx(result["after"]["nll"], rel=1e-12)


def test_a_saved_recalibrator_applied_to_new_rows_gives_their_intervals(
        client, default_nb) -> None:
    dataset = upload(client, default_nb.head(3000).to_csv(index=False).encode(), "nb.csv")
    result = fit(client, dataset.json()["id"], method="venn_abers")
    document = client.get(f"/api/v1/recalibrations/{result['id']}/model").json()
    new = default_nb.iloc[3000:3400].drop(columns=["y_true", "split"]).reset_index(drop=True)
    expected = Recalibrator.from_json(json.loads(json.dumps(document)))
    p = new["y_prob"].to_numpy()
    lower, upper = expected.predict_interval(p)  # type: ignore[attr-defined]

    by_recalibration = applied(client, f"/api/v1/recalibrations/{result['id']}/apply", new)
    model_id = client.post("/api/v1/models", json=document).json()["id"]
    by_saved_model = applied(client, f"/api/v1/models/{model_id}/apply", new)
    for frame in (by_recalibration, by_saved_model):
        assert list(frame.columns) == [*new.columns, *PROBABILITIES, *INTERVALS]
        np.testing.assert_allclose(frame[PROBABILITIES], expected.predict_proba(p), atol=1e-12)
        np.testing.assert_allclose(frame[["p0_0", "p0_1"]], lower, rtol=0, atol=1e-12)
        np.testing.assert_allclose(frame[["p1_0", "p1_1"]], upper, rtol=0, atol=1e-12)
    pd.testing.assert_frame_equal(by_recalibration, by_saved_model)


def test_without_a_split_the_width_is_the_cross_fitted_intervals(client, default_nb) -> None:
    frame = default_nb.drop(columns="split").head(2500)
    dataset = upload(client, frame.to_csv(index=False).encode(), "nb.csv").json()["id"]
    result = fit(client, dataset, method="venn_abers", params={"cross_folds": 3})
    assert result["cross_fitted"] is True and result["params"]["cross_folds"] == 3
    crossfitted = download(client, result["id"], scores="cross_fitted")
    by_model = download(client, result["id"])
    assert list(crossfitted.columns) == list(by_model.columns) == [
        *frame.columns, *PROBABILITIES, *INTERVALS]
    assert result["interval_width"] == pytest.approx(
        (crossfitted["p1_1"] - crossfitted["p0_1"]).mean(), rel=1e-12)
    services = client.app.state.services
    np.testing.assert_allclose(
        crossfitted[[*PROBABILITIES, "p0_0", "p0_1", "p1_0", "p1_1"]].to_numpy(),
        cross_fit(make_recalibrator("venn_abers", {"cross_folds": 3}),
                  services.datasets.prediction_set(dataset),
                  random_state=services.settings.random_state), rtol=0, atol=1e-12)


def test_multiclass_download_has_an_interval_per_class(client, shared_data) -> None:
    content = (shared_data / "digits_svm.csv").read_bytes()
    dataset = upload(client, content, "digits_svm.csv").json()["id"]
    result = fit(client, dataset, method="venn_abers")
    frame = download(client, result["id"], format="parquet")
    classes = range(10)
    assert list(frame.columns[-30:]) == [*(f"calibrated_proba_{k}" for k in classes),
                                         *(f"p0_{k}" for k in classes),
                                         *(f"p1_{k}" for k in classes)]
    proba = frame[[f"calibrated_proba_{k}" for k in classes]].to_numpy()
    lower = frame[[f"p0_{k}" for k in classes]].to_numpy()
    upper = frame[[f"p1_{k}" for k in classes]].to_numpy()
    assert np.all(lower <= proba + 1e-12) and np.all(proba <= upper + 1e-12)
    test = (frame["split"] == "test").to_numpy()
    assert result["interval_width"] == pytest.approx((upper - lower)[test].mean(), rel=1e-12)
    assert result["after"]["nll"] < result["before"]["nll"]  # one-vs-rest helps on digits


def test_the_method_is_listed_and_its_bad_parameters_refused(client, default_nb) -> None:
    methods = {m["method"]: m for m in client.get("/api/v1/methods").json()}
    assert methods["venn_abers"]["name"] == "Venn-Abers"
    assert methods["venn_abers"]["params"] == {"cross_folds": 1, "multiclass": "one_vs_rest",
                                               "random_state": 0}
    dataset = upload(client, default_nb.head(500).to_csv(index=False).encode()).json()["id"]
    url = f"/api/v1/datasets/{dataset}/recalibrations"
    for params, phrase in (({"cross_folds": 0}, "cross_folds must be an integer from 1"),
                           ({"cross_folds": 10**6}, "cross_folds must be an integer from 1"),
                           ({"multiclass": "pairs"}, "multiclass must be one of"),
                           ({"folds": 3}, "Valid parameters: cross_folds, multiclass")):
        error = assert_error(client.post(url, json={"method": "venn_abers", "params": params}),
                             422, "invalid_parameters")
        assert phrase in error["message"]


def test_cli_recalibrate_writes_the_interval_columns(shared_data, tmp_path) -> None:
    out, model = tmp_path / "out.csv", tmp_path / "model.json"
    assert cli_main(["recalibrate", str(shared_data / "default_nb.csv"), "--method",
                     "venn_abers", "--out", str(out), "--model-out", str(model)]) == 0
    written = pd.read_csv(out)
    assert list(written.columns[-6:]) == [*PROBABILITIES, *INTERVALS]
    again = tmp_path / "again.csv"
    assert cli_main(["apply", str(model), str(shared_data / "default_nb.csv"), "--out",
                     str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()
