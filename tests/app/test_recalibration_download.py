"""What a recalibration's download holds and what it is called.

Without a split column the comparison scores five cross-fitting models; the download a
user takes away must still be what the exported model gives on those rows, so that
applying the model document to the same file reproduces it.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pytest

from app.cli import main as cli_main
from app.services.methods import make_recalibrator
from app.services.recalibration_fitting import cross_fit
from calibcore.metrics import negative_log_likelihood
from calibcore.recalibration import Recalibrator
from tests.app.test_api import assert_error, upload
from tests.app.test_recalibration_api import fit, recorded_features

BINARY = ["calibrated_proba_0", "calibrated_proba_1"]
DIGITS = [f"calibrated_proba_{k}" for k in range(10)]


@pytest.fixture
def no_split(shared_data) -> bytes:
    """default_nb without its split column: 7,000 rows, 3,814 distinct scores."""
    frame = pd.read_csv(shared_data / "default_nb.csv").drop(columns="split")
    return frame.to_csv(index=False).encode()


def get(client: Any, recalibration: str, **params: str) -> Any:
    response = client.get(f"/api/v1/recalibrations/{recalibration}/download", params=params)
    assert response.status_code == 200, response.text
    return response


def table(response: Any) -> pd.DataFrame:
    if response.headers["content-type"].startswith("text/csv"):
        return pd.read_csv(io.BytesIO(response.content))
    return pd.read_parquet(io.BytesIO(response.content))


def applied(client: Any, recalibration: str, content: bytes, filename: str,
            export_format: str) -> Any:
    response = client.post(f"/api/v1/recalibrations/{recalibration}/apply",
                           params={"format": export_format}, files={"file": (filename, content)})
    assert response.status_code == 200, response.text
    return response


def from_json(document: dict[str, Any], frame: pd.DataFrame) -> np.ndarray:
    """calibcore's loader on the columns the document names, as a user would call it."""
    columns = document["inputs"]["probability_columns"]
    proba = frame[columns].to_numpy(dtype=float)
    if len(columns) == 1:
        proba = np.column_stack([1 - proba[:, 0], proba[:, 0]])
    proba = proba / proba.sum(axis=1, keepdims=True)
    return Recalibrator.from_json(json.loads(json.dumps(document))).predict_proba(
        proba, features=recorded_features(document, frame))


@pytest.mark.slow
@pytest.mark.parametrize("method, features", [("platt", None), ("isotonic", None),
                                              ("variable_tree", ["balance"])])
def test_default_download_is_the_exported_model_on_every_row(
        client, no_split, tmp_path, method, features) -> None:
    dataset = upload(client, no_split, "default_nb.csv").json()["id"]
    result = fit(client, dataset, method=method, features=features)
    assert "cross-fitting" in result["scheme"] and result["cross_fitted"] is True
    document = client.get(f"/api/v1/recalibrations/{result['id']}/model").json()

    # the same bytes as the apply route on the same file, CSV and Parquet
    download = get(client, result["id"])
    assert download.content == applied(client, result["id"], no_split, "default_nb.csv",
                                       "csv").content
    parquet = get(client, result["id"], format="parquet")
    pd.testing.assert_frame_equal(table(parquet), table(applied(
        client, result["id"], no_split, "default_nb.csv", "parquet")), check_exact=True)

    # ... as calibcore's own loader and `calibdash apply`
    frame = table(download)
    original = pd.read_csv(io.BytesIO(no_split))
    assert list(frame.columns) == [*original.columns, *BINARY] and len(frame) == 7000
    np.testing.assert_allclose(frame[BINARY].to_numpy(), from_json(document, original),
                               rtol=0, atol=1e-12)
    model_path, data_path, out = tmp_path / "m.json", tmp_path / "d.csv", tmp_path / "o.csv"
    model_path.write_text(json.dumps(document))
    data_path.write_bytes(no_split)
    assert cli_main(["apply", str(model_path), str(data_path), "--out", str(out)]) == 0
    assert out.read_bytes() == download.content

    # one input maps to one output when the model reads the score alone
    if features is None:
        outputs = frame.groupby("y_prob")["calibrated_proba_1"].nunique()
        assert outputs.max() == 1 and frame["y_prob"].duplicated().sum() > 3000


@pytest.mark.slow
@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_cross_fitted_download_is_what_the_comparison_scored(
        client, no_split, method) -> None:
    dataset = upload(client, no_split, "default_nb.csv").json()["id"]
    result = fit(client, dataset, method=method)
    model = table(get(client, result["id"], format="parquet"))
    crossfitted = get(client, result["id"], format="parquet", scores="cross_fitted")
    assert crossfitted.headers["content-disposition"] == (
        f'attachment; filename="default_nb-{method}-calibrated-crossfitted.parquet"')
    crossfitted_frame = table(crossfitted)
    assert list(crossfitted_frame.columns) == list(model.columns)
    pd.testing.assert_frame_equal(crossfitted_frame.drop(columns=BINARY),
                                  model.drop(columns=BINARY))
    cross, by_model = crossfitted_frame[BINARY].to_numpy(), model[BINARY].to_numpy()
    assert np.abs(cross - by_model).max() > 1e-3

    # five models: one score has several cross-fitted outputs
    assert crossfitted_frame.groupby("y_prob")["calibrated_proba_1"].nunique().max() > 1

    # the comparison's NLL of the method is the NLL of these scores, not the model's
    labels = crossfitted_frame["y_true"].to_numpy()
    compared = next(row for row in result["comparison"]["rows"] if row.get("id") == result["id"])
    nll = compared["values"]["nll"]["value"]
    assert nll == pytest.approx(negative_log_likelihood(labels, cross), rel=1e-12)
    assert nll == pytest.approx(result["after"]["nll"], rel=1e-12)
    assert abs(nll - negative_log_likelihood(labels, by_model)) > 1e-9

    # ... and they are the out-of-fold scores, recomputed here with the same seeded folds
    services = client.app.state.services
    np.testing.assert_allclose(cross, cross_fit(
        make_recalibrator(method, {}), services.datasets.prediction_set(dataset),
        random_state=services.settings.random_state), rtol=0, atol=1e-12)


@pytest.mark.slow
def test_with_a_split_the_model_is_the_download_and_there_is_no_cross_fitted_one(
        client, shared_data) -> None:
    content = (shared_data / "digits_svm.csv").read_bytes()
    dataset = upload(client, content, "digits_svm.csv").json()["id"]
    result = fit(client, dataset, method="temperature")
    assert result["cross_fitted"] is False
    download = get(client, result["id"])
    assert download.headers["content-disposition"] == (
        'attachment; filename="digits_svm-temperature-calibrated.csv"')
    assert download.content == applied(client, result["id"], content, "digits_svm.csv",
                                       "csv").content
    error = assert_error(client.get(f"/api/v1/recalibrations/{result['id']}/download",
                                    params={"scores": "cross_fitted"}), 409, "not_cross_fitted")
    assert "split" in error["message"]
    assert_error(client.get(f"/api/v1/recalibrations/{result['id']}/download",
                            params={"scores": "both"}), 422)


@pytest.mark.slow
def test_downloads_are_named_after_the_dataset_and_method(client, no_split) -> None:
    dataset = upload(client, no_split, "default_nb.csv").json()["id"]
    result = fit(client, dataset, method="temperature")
    names = {
        "csv": get(client, result["id"]).headers["content-disposition"],
        "parquet": get(client, result["id"], format="parquet").headers["content-disposition"],
        "model": client.get(f"/api/v1/recalibrations/{result['id']}/model").headers[
            "content-disposition"],
    }
    assert names == {
        "csv": 'attachment; filename="default_nb-temperature-calibrated.csv"',
        "parquet": 'attachment; filename="default_nb-temperature-calibrated.parquet"',
        "model": 'attachment; filename="default_nb-temperature-model.json"'}


@pytest.mark.parametrize("name, plain, utf8", [
    ('Q3 "final"\r\nSet-Cookie: x=1', "Q3_final_Set-Cookie_x_1", None),
    ("../../etc/passwd", "etc_passwd", None),
    ('a\\b";\x00\t<script>', "a_b_script", None),
    ("données ☃ été.csv", "donnees_ete", "données_été"),
    ("日本語のデータ", "", "日本語のデータ"),
    ("\u202egnp.exe", "gnp.exe", None),
    ("x" * 500, "x" * 60, None),
    ("...", "dataset", None),
])
@pytest.mark.slow
def test_hostile_dataset_names_give_a_safe_header(client, no_split, name, plain, utf8) -> None:
    dataset = upload(client, no_split, "d.csv", name=name).json()
    assert dataset["name"] == name
    result = fit(client, dataset["id"], method="temperature")
    for response, suffix in (
            (get(client, result["id"]), "-temperature-calibrated.csv"),
            (client.get(f"/api/v1/recalibrations/{result['id']}/model"),
             "-temperature-model.json")):
        header = response.headers["content-disposition"]
        header.encode("ascii")  # no raw non-ASCII byte in the header
        assert not any(ch in header for ch in "\r\n\x00\\/<>")
        quoted = header.split('filename="', 1)[1].split('"', 1)[0]
        assert set(quoted) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789._-")
        assert quoted == (plain + suffix).lstrip("-")
        if utf8 is None:
            assert "filename*" not in header
        else:
            assert "; filename*=UTF-8''" in header
            assert unquote(header.split("UTF-8''", 1)[1]) == utf8 + suffix


def test_a_cross_fitted_recalibration_stored_before_keeps_its_model_download(
        client, no_split) -> None:
    """Stored before the model's scores were kept: they are computed on first download."""
    dataset = upload(client, no_split, "default_nb.csv").json()["id"]
    result = fit(client, dataset, method="platt")
    store = client.app.state.services.store
    record = store.get("recalibration", result["id"])
    store.put(replace(record, meta={k: v for k, v in record.meta.items()
                                    if k != "cross_fitted"}))
    store.table_path(f"{result['id']}.model_scores").unlink()
    expected = applied(client, result["id"], no_split, "default_nb.csv", "csv").content
    assert get(client, result["id"]).content == expected
    assert store.table_path(f"{result['id']}.model_scores").exists()
    assert get(client, result["id"]).content == expected
    assert get(client, result["id"], scores="cross_fitted").content != expected


@pytest.mark.parametrize("filename, header", [
    ("new.csv", 'attachment; filename="new-calibrated.csv"'),
    ("C:\\Users\\me\\scores v2.csv.gz", 'attachment; filename="scores_v2-calibrated.csv"'),
    # a name outside Latin-1 used to reach the header raw and fail it (a 500)
    ("データ.csv", "attachment; filename=\"calibrated.csv\"; "
                   "filename*=UTF-8''%E3%83%87%E3%83%BC%E3%82%BF-calibrated.csv"),
])
@pytest.mark.slow
def test_applied_files_are_named_after_the_upload(client, shared_data, filename,
                                                  header) -> None:
    content = (shared_data / "digits_svm.csv").read_bytes()
    dataset = upload(client, content, "digits_svm.csv").json()["id"]
    result = fit(client, dataset, method="temperature")
    response = applied(client, result["id"], content, filename, "csv")
    assert response.headers["content-disposition"] == header
