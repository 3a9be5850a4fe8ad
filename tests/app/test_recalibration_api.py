"""The recalibration workbench through REST: every method, comparisons, export and re-apply."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest

from app.cli import main as cli_main
from app.services.comparison import paired_differences
from app.services.row_columns import save_row_column
from app.services.saved_models import ModelInputs, read_probabilities
from calibcore.local import Representation
from calibcore.recalibration import REGISTRY, Recalibrator
from calibcore.variable import variable_ece
from tests.app.test_api import assert_error, upload

PROBA = [f"proba_{k}" for k in range(10)]
CORRECTED = [f"calibrated_proba_{k}" for k in range(10)]
#: Feature columns per method for the example datasets (the tree follows one variable).
DIGITS_FEATURES = {"variable_tree": ["px10"]}
BINARY_FEATURES = {"variable_tree": ["balance"]}
#: Methods slower than a few seconds on the binary example.
SLOW_ON_BINARY = {"swc_hh"}


@pytest.fixture
def digits_frame(shared_data) -> pd.DataFrame:
    return pd.read_csv(shared_data / "digits_svm.csv")


@pytest.fixture
def digits(client, shared_data) -> str:  # type: ignore[no-untyped-def]
    content = (shared_data / "digits_svm.csv").read_bytes()
    return str(upload(client, content, "digits_svm.csv").json()["id"])


@pytest.fixture
def binary(client, shared_data) -> str:  # type: ignore[no-untyped-def]
    # The first 2,000 rows of default_nb keep every method (SWC-HH included) quick.
    frame = pd.read_csv(shared_data / "default_nb.csv").head(2000)
    return str(upload(client, frame.to_csv(index=False).encode(), "default_nb.csv").json()["id"])


def fit(client, dataset: str, **body: Any) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    response = client.post(f"/api/v1/datasets/{dataset}/recalibrations", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def download(client, recalibration: str, **params: str) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    response = client.get(f"/api/v1/recalibrations/{recalibration}/download", params=params)
    assert response.status_code == 200, response.text
    if params.get("format") == "parquet":
        return pd.read_parquet(io.BytesIO(response.content))
    return pd.read_csv(io.BytesIO(response.content))


def assert_on_simplex(values: np.ndarray) -> None:
    assert np.isfinite(values).all()
    assert values.min() >= 0 and values.max() <= 1
    np.testing.assert_allclose(values.sum(axis=1), 1, atol=1e-9)


def normalized(frame: pd.DataFrame) -> np.ndarray:
    """Probability columns as the app reads them: each row rescaled to sum exactly to 1, by
    the app's own reader. (Rescaled by a differently ordered sum, a probability can come
    out a unit in the last place apart; Venn-Abers, which steps at every calibration
    score, then moves a row tied with a calibration score, by up to 1.6e-5 on digits.)"""
    return read_probabilities(frame, ModelInputs(tuple(PROBA), tuple(map(str, range(10)))))


def recorded_features(document: dict[str, Any], frame: pd.DataFrame) -> Any:
    """The features= argument for ``frame`` as the model document records them."""
    spec = document["inputs"]["features"]
    if spec is None:
        return None
    columns = spec["columns"]
    if spec["kind"] == "variable":
        return frame[columns].to_numpy(dtype=float)
    if spec["kind"] == "table":
        return frame[columns].reset_index(drop=True)
    return Representation.from_dict(spec["representation"]).transform(frame[columns])


def wait_for_job(client, job_id: str, seconds: float = 120) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    seen_detail: list[Any] = []
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job.get("detail"):
            seen_detail.append(job["detail"])
        if job["status"] not in ("queued", "running"):
            job["seen_detail"] = seen_detail
            return dict(job)
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still running after {seconds} s")


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_every_method_on_digits_is_on_the_simplex_and_round_trips(
        client, digits, digits_frame, method) -> None:
    result = fit(client, digits, method=method, features=DIGITS_FEATURES.get(method))
    assert result["method"] == method and result["n_heldout"] == 624
    assert [row["name"] for row in result["comparison"]["rows"]] == ["uncalibrated",
                                                                     result["name"]]
    frame = download(client, result["id"])
    assert len(frame) == 1197
    assert_on_simplex(frame[CORRECTED].to_numpy())
    document = client.get(f"/api/v1/recalibrations/{result['id']}/model").json()
    test = digits_frame[digits_frame["split"] == "test"]
    np.testing.assert_allclose(
        Recalibrator.from_json(document).predict_proba(
            normalized(test), features=recorded_features(document, test)),
        frame.loc[test.index, CORRECTED].to_numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", [
    pytest.param(m, marks=pytest.mark.slow) if m in SLOW_ON_BINARY else m
    for m in sorted(REGISTRY)])
def test_every_method_on_the_binary_example_is_on_the_simplex(client, binary, method) -> None:
    result = fit(client, binary, method=method, features=BINARY_FEATURES.get(method))
    assert result["n_heldout"] == result["comparison"]["n"] > 900
    frame = download(client, result["id"], format="parquet")
    # Venn-Abers adds each class's interval after the probabilities
    intervals = ["p0_0", "p0_1", "p1_0", "p1_1"] if method == "venn_abers" else []
    width = 2 + len(intervals)
    assert len(frame) == 2000 and list(frame.columns[-width:]) == [
        "calibrated_proba_0", "calibrated_proba_1", *intervals]
    assert_on_simplex(frame[["calibrated_proba_0", "calibrated_proba_1"]].to_numpy())


@pytest.mark.slow
def test_comparison_job_of_three_methods_reports_each_and_marks_the_best(client, digits) -> None:
    response = client.post(f"/api/v1/datasets/{digits}/recalibrations", json={
        "async": True, "methods": [
            "temperature",
            {"method": "lece", "params": {"neighborhood_size": 0.1, "threshold": 0.02}},
            {"method": "variable_tree", "features": ["px10"]}]})
    assert response.status_code == 202, response.text
    job = wait_for_job(client, response.json()["job_id"])
    assert job["status"] == "succeeded", job
    final = job["detail"]
    assert [step["method"] for step in final] == ["temperature", "lece", "variable_tree"]
    assert all(step["status"] == "succeeded" and step["fraction"] == 1.0 for step in final)
    result = job["result"]
    assert len(result["recalibrations"]) == 3 and result["failed"] == []
    table = result["comparison"]
    assert table["n"] == 624 and "test rows" in table["scheme"]
    names = [row["name"] for row in table["rows"]]
    assert names == ["uncalibrated", "Temperature scaling",
                     "LECE (locally equal calibration errors)", "Variable-based tree calibration"]
    keys = [column["key"] for column in table["columns"]]
    assert keys == ["ece", "smooth_ece", "laplace_kernel_calibration_error", "brier", "nll",
                    "accuracy", "mlce", "max_vece", "vece:px10"]
    for column in table["columns"]:
        values = [row["values"][column["key"]]["value"] for row in table["rows"]]
        best = (max if column["better"] == "higher" else min)(values)
        marked = [row["name"] for row in table["rows"] if column["key"] in row["best"]]
        assert marked == [row["name"] for row, v in zip(table["rows"], values, strict=True)
                          if abs(v - best) <= 1e-12], column
    for row in table["rows"]:
        for key in ("ece", "smooth_ece", "nll", "brier", "accuracy", "vece:px10"):
            entry = row["values"][key]
            assert entry["low"] is not None, (row["name"], key)
            assert entry["low"] <= entry["value"] <= entry["high"], (row["name"], key)
        assert row["values"]["mlce"]["low"] is None and row["values"]["max_vece"]["variable"]
    assert table["mlce_gamma"] == 0.4 and table["mlce_space"].startswith("PCA(")
    # The uncalibrated row matches the dataset's measures on its test rows.
    measures = client.get(f"/api/v1/datasets/{digits}/metrics",
                          params={"subset": "test"}).json()["metrics"]
    uncalibrated = table["rows"][0]["values"]
    for key in ("ece", "nll", "brier", "accuracy"):
        assert uncalibrated[key]["plug_in"] == pytest.approx(measures[key], rel=1e-12)
    advice = table["recommendation"]
    assert advice["reasons"] and not advice["keep_uncalibrated"]
    nll = {row["name"]: row["values"]["nll"]["value"] for row in table["rows"]}
    for difference in advice["differences"]:
        change = difference["nll_minus_uncalibrated"]
        assert change[0] == pytest.approx(nll[difference["name"]] - nll["uncalibrated"])
        assert change[1] <= change[0] <= change[2]
    assert advice["name"] in nll and any(advice["name"] in reason for reason in advice["reasons"])
    assert len(table["reliability"]) == 4
    assert table["positive_reliability"] is None and table["positive_class"] is None  # 10 classes
    ids = ",".join(r["id"] for r in result["recalibrations"])
    again = client.get(f"/api/v1/datasets/{digits}/recalibrations/comparison",
                       params={"ids": ids}).json()
    assert again["rows"] == table["rows"]


def test_paired_intervals_of_many_rows_have_the_spread_of_a_mean() -> None:
    """Above 20,000 rows the paired bootstrap resamples a 20,000-row subsample and scales
    its spread: the interval still has the width the central limit theorem gives the mean
    of all the rows, around the mean of all the rows."""
    rng = np.random.default_rng(5)
    n_rows = 300_000
    differences = np.column_stack([rng.normal(0.01, 0.3, n_rows),
                                   rng.exponential(0.2, n_rows) - 0.2])
    for column, (estimate, low, high) in zip(differences.T,
                                             paired_differences(differences, 1000, 0),
                                             strict=True):
        assert estimate == pytest.approx(column.mean(), rel=1e-12)
        half_width = 1.959964 * column.std() / np.sqrt(n_rows)
        assert low < estimate < high
        assert high - low == pytest.approx(2 * half_width, rel=0.1)
        assert estimate - low == pytest.approx(half_width, rel=0.15)


@pytest.mark.slow
def test_methods_need_valid_features(client, digits, binary) -> None:
    url = f"/api/v1/datasets/{digits}/recalibrations"
    error = assert_error(client.post(url, json={"method": "variable_tree"}), 422,
                         "invalid_features")
    assert "px10" in error["message"]
    assert_error(client.post(url, json={"method": "variable_tree", "features": ["px1", "px2"]}),
                 422, "invalid_features")
    assert_error(client.post(url, json={"method": "swc", "features": ["nope"]}), 409,
                 "unknown_feature")
    assert_error(client.post(url, json={"methods": ["temperature", {"method": "magic"}]}), 422,
                 "unknown_method")
    assert_error(client.post(f"/api/v1/datasets/{binary}/recalibrations", json={
        "method": "variable_tree", "features": ["student"]}), 422, "invalid_features")
    result = fit(client, binary, method="swc", features=["student", "balance"])
    assert result["features"] == ["student", "balance"]
    assert not any("seeded sample" in note for note in result["feature_notes"])
    sampled = fit(client, binary, method="swc", params={"max_calibration_rows": 300})
    assert any("seeded sample of 300 of the" in note for note in sampled["feature_notes"])


@pytest.mark.slow
def test_composition_steps_by_name(client, digits) -> None:
    result = fit(client, digits, method="composed", params={"steps": [
        "temperature", {"method": "lece", "params": {"neighborhood_size": 0.1, "threshold": 0}}]})
    assert result["params"]["steps"][1] == {"method": "lece", "params": {
        "n_folds": 10, "neighborhood_size": 0.1, "random_state": 0, "threshold": 0}}
    assert_error(client.post(f"/api/v1/datasets/{digits}/recalibrations", json={
        "method": "composed", "params": {"steps": ["temperature", "swc"]}}), 422,
        "invalid_parameters")


def _new_file(frame: pd.DataFrame) -> pd.DataFrame:
    """Test rows as a 'new' file: no label or split, columns shuffled, a risky text cell."""
    rows = frame[frame["split"] == "test"].drop(columns=["label", "split"])
    rows = rows[list(reversed(rows.columns))].reset_index(drop=True)
    rows.insert(0, "note", ["=HYPERLINK(1)"] + ["ok"] * (len(rows) - 1))
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("method, features", [("temperature", None),
                                              ("variable_tree", ["px10"]),
                                              ("swc", ["px10", "px20", "px30", "px42"])])
def test_fit_export_import_apply_through_rest_and_cli_matches_in_process(
        client, digits, digits_frame, tmp_path, method, features) -> None:
    result = fit(client, digits, method=method, features=features)
    document = client.get(f"/api/v1/recalibrations/{result['id']}/model").json()
    imported = client.post("/api/v1/models", json=document)
    assert imported.status_code == 201, imported.text
    model_id = imported.json()["id"]
    assert imported.json()["inputs"]["probability_columns"] == PROBA
    new = _new_file(digits_frame)
    parquet = io.BytesIO()
    new.to_parquet(parquet, index=False)

    # In process: calibcore's loader on the feature columns the document records.
    model = Recalibrator.from_json(json.loads(json.dumps(document)))
    expected = model.predict_proba(normalized(new), features=recorded_features(document, new))

    via_models = client.post(f"/api/v1/models/{model_id}/apply", params={"format": "csv"},
                             files={"file": ("new.parquet", parquet.getvalue())})
    assert via_models.status_code == 200, via_models.text
    assert 'filename="new-calibrated.csv"' in via_models.headers["content-disposition"]
    assert "'=HYPERLINK(1)" in via_models.text
    corrected = pd.read_csv(io.BytesIO(via_models.content))
    assert list(corrected.columns) == [*new.columns, *CORRECTED]
    np.testing.assert_allclose(corrected[CORRECTED].to_numpy(), expected, rtol=0, atol=1e-12)

    via_recalibration = client.post(f"/api/v1/recalibrations/{result['id']}/apply",
                                    params={"format": "parquet"},
                                    files={"file": ("new.csv", new.to_csv(index=False).encode())})
    assert via_recalibration.status_code == 200, via_recalibration.text
    np.testing.assert_allclose(
        pd.read_parquet(io.BytesIO(via_recalibration.content))[CORRECTED].to_numpy(), expected,
        rtol=0, atol=1e-12)

    model_path, data_path, out = tmp_path / "m.json", tmp_path / "new.csv", tmp_path / "o.csv"
    model_path.write_text(json.dumps(document))
    new.to_csv(data_path, index=False)
    assert cli_main(["apply", str(model_path), str(data_path), "--out", str(out)]) == 0
    np.testing.assert_allclose(pd.read_csv(out)[CORRECTED].to_numpy(), expected, rtol=0,
                               atol=1e-12)


def test_bad_model_documents_are_422(client, digits) -> None:
    assert_error(client.post("/api/v1/models", content=b"{oops",
                             headers={"content-type": "application/json"}), 422)
    assert_error(client.post("/api/v1/models", json=[1, 2]), 422, "invalid_model")
    assert_error(client.post("/api/v1/models", json={"format": "pickle"}), 422, "invalid_model")
    base = {"format": "calibdash-recalibrator", "version": 1, "method": "temperature",
            "params": {}}
    assert_error(client.post("/api/v1/models", json={**base, "state": {
        "n_classes_": 3, "temperature_": "hot"}}), 422, "invalid_model")
    assert_error(client.post("/api/v1/models", json={**base, "state": [1]}), 422,
                 "invalid_model")
    assert_error(client.post("/api/v1/models", json={**base, "method": "magic", "state": {}}),
                 422, "invalid_model")
    good = client.get("/api/v1/recalibrations/" + fit(client, digits, method="temperature")["id"]
                      + "/model").json()
    assert_error(client.post("/api/v1/models", json={**good, "inputs": {
        **good["inputs"], "classes": ["a", "b"]}}), 422, "invalid_model")
    tree = client.get("/api/v1/recalibrations/" + fit(
        client, digits, method="variable_tree", features=["px10"])["id"] + "/model").json()
    assert_error(client.post("/api/v1/models", json={k: v for k, v in tree.items()
                                                     if k != "inputs"}), 422, "invalid_model")
    assert client.get("/api/v1/models").json() == []


@pytest.mark.slow
def test_apply_names_the_missing_columns(client, digits, digits_frame) -> None:
    result = fit(client, digits, method="variable_tree", features=["px10"])
    new = _new_file(digits_frame).drop(columns=["proba_3", "proba_7", "px10"])
    error = assert_error(client.post(f"/api/v1/recalibrations/{result['id']}/apply",
                                     files={"file": ("x.csv", new.to_csv(index=False).encode())}),
                         422, "missing_columns")
    for column in ("proba_3", "proba_7", "px10"):
        assert repr(column) in error["message"]
    broken = _new_file(digits_frame)
    broken["proba_2"] = broken["proba_2"].astype(object)
    broken.loc[5, "proba_2"] = "n/a"
    error = assert_error(client.post(f"/api/v1/recalibrations/{result['id']}/apply",
                                     files={"file": ("x.csv",
                                                     broken.to_csv(index=False).encode())}), 422)
    assert error["details"]["column"] == "proba_2" and error["details"]["rows"] == [5]
    assert_error(client.post("/api/v1/models/md_nope/apply",
                             files={"file": ("x.csv", b"a\n1\n")}), 404, "not_found")


@pytest.mark.slow
def test_model_without_inputs_applies_by_inferred_columns(client, digits, digits_frame) -> None:
    document = client.get("/api/v1/recalibrations/" + fit(
        client, digits, method="platt")["id"] + "/model").json()
    bare = {key: value for key, value in document.items() if key != "inputs"}
    model_id = client.post("/api/v1/models", json=bare).json()["id"]
    new = _new_file(digits_frame)
    response = client.post(f"/api/v1/models/{model_id}/apply",
                           files={"file": ("n.csv", new.to_csv(index=False).encode())})
    assert response.status_code == 200, response.text
    corrected = pd.read_csv(io.BytesIO(response.content))
    np.testing.assert_allclose(corrected[CORRECTED].to_numpy(),
                               Recalibrator.from_json(bare).predict_proba(normalized(new)),
                               rtol=0, atol=1e-12)
    assert client.delete(f"/api/v1/models/{model_id}").status_code == 204
    assert_error(client.get(f"/api/v1/models/{model_id}"), 404)


def test_download_with_diagnostic_columns(client, binary) -> None:
    result = fit(client, binary, method="temperature")
    error = assert_error(client.get(f"/api/v1/recalibrations/{result['id']}/download",
                                    params={"columns": "lce"}), 409, "column_not_computed")
    assert "lce" in error["message"]
    store = client.app.state.services.store
    save_row_column(store, binary, "lce", np.linspace(0, 1, 2000))
    save_row_column(store, binary, "balance", np.zeros(2000))  # clashes with a feature name
    frame = download(client, result["id"], columns="lce,balance")
    assert list(frame.columns[-2:]) == ["lce", "balance_diagnostic"]
    np.testing.assert_allclose(frame["lce"], np.linspace(0, 1, 2000))
    assert frame["balance"].std() > 0


@pytest.mark.parametrize("method, params", [
    ("lece", {"neighborhood_size": "x"}), ("dirichlet", {"reg_lambda": "a"}),
    ("swc", {"n_estimators": 0}), ("histogram", {"n_bins": "ten"}), ("platt", {"bogus": 1})])
def test_bad_parameter_values_are_422_not_500(client, digits, method, params) -> None:
    response = client.post(f"/api/v1/datasets/{digits}/recalibrations",
                           json={"method": method, "params": params})
    assert_error(response, 422)
    assert client.get(f"/api/v1/datasets/{digits}/recalibrations").json() == []


@pytest.mark.slow
def test_a_single_class_calibration_split_is_a_422_naming_the_counts(client) -> None:
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"y_true": np.r_[np.ones(40, dtype=int), rng.integers(0, 2, 40)],
                          "y_prob": rng.uniform(0.05, 0.95, 80),
                          "split": ["calibration"] * 40 + ["test"] * 40})
    frame.loc[40, "y_true"], frame.loc[41, "y_true"] = 0, 1  # the test rows have both
    dataset = upload(client, frame.to_csv(index=False).encode()).json()["id"]
    for method in ("platt", "histogram", "beta"):
        response = client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                               json={"method": method})
        error = assert_error(response, 409, "single_class")
        assert "class 1: 40 rows" in error["message"]


def test_max_vece_covers_categorical_variables_like_the_ranking(client) -> None:
    """The comparison's max VECE names the variable the Variables ranking puts first, with
    its VECE, when that variable is categorical (it counted numeric ones only before)."""
    rng = np.random.default_rng(16)
    n = 3000
    carrier = rng.choice(["AA", "DL", "UA", "WN"], n)
    confidence = rng.uniform(0.55, 0.98, n)
    accuracy = confidence - np.where(carrier == "WN", 0.3, 0.0)  # wrong along the carrier
    correct = rng.random(n) < np.clip(accuracy, 0, 1)
    y_prob = np.where(rng.random(n) < 0.5, confidence, 1 - confidence)
    predicted = (y_prob >= 0.5).astype(int)
    frame = pd.DataFrame({
        "y_true": np.where(correct, predicted, 1 - predicted), "y_prob": y_prob.round(6),
        "carrier": carrier, "distance": rng.gamma(3, 300, n).round(1),
        "hour": rng.integers(0, 24, n), "split": np.where(rng.random(n) < 0.5, "calibration",
                                                          "test")})
    dataset = str(upload(client, frame.to_csv(index=False).encode(), "flights.csv").json()["id"])
    comparison = fit(client, dataset, method="temperature")["comparison"]
    ranking = client.get(f"/api/v1/datasets/{dataset}/variables",
                         params={"subset": "test", "n_permutations": 0}).json()["variables"]
    assert ranking[0]["variable"] == "carrier" and ranking[0]["kind"] == "categorical"
    column = next(c for c in comparison["columns"] if c["key"] == "max_vece")
    assert column["label"] == "max VECE (all variables)" and "categorical" in column["meaning"]
    uncalibrated = comparison["rows"][0]["values"]["max_vece"]
    assert uncalibrated["variable"] == "carrier" and "(categorical)" in uncalibrated["note"]
    assert uncalibrated["value"] == pytest.approx(ranking[0]["vece"], rel=1e-12)
    # the ranking's first VECE is the largest over all three variables: check it directly
    test = frame[frame["split"] == "test"].reset_index(drop=True)
    expected = max(variable_ece(test[name], test["y_true"], test["y_prob"], kind=kind)
                   for name, kind in (("carrier", "categorical"), ("distance", "numeric"),
                                      ("hour", "numeric")))
    assert uncalibrated["value"] == pytest.approx(expected, rel=1e-10)
    assert all(row["values"]["max_vece"]["variable"] for row in comparison["rows"])


def test_binary_comparison_has_positive_class_diagrams(client, binary, shared_data) -> None:
    """For binary data the comparison also bins P(second class) against its frequency on
    the held-out rows: counted here with numpy from the file and the downloaded scores."""
    result = fit(client, binary, method="platt")
    comparison = result["comparison"]
    assert comparison["positive_class"] == "1"
    frame = pd.read_csv(shared_data / "default_nb.csv").head(2000)
    test = frame["split"].eq("test").to_numpy()
    corrected = download(client, result["id"])
    candidates = {"uncalibrated": frame["y_prob"].to_numpy(),
                  "Platt scaling": corrected["calibrated_proba_1"].to_numpy()}
    outcome = frame["y_true"].to_numpy()[test] == 1
    assert [e["name"] for e in comparison["positive_reliability"]] == list(candidates)
    for entry, score in zip(comparison["positive_reliability"], candidates.values(),
                            strict=True):
        p = score[test]
        bins = np.minimum((p * 15).astype(int), 14)  # 15 equal-width bins, 1.0 in the last
        diagram = entry["diagram"]
        assert diagram["count"] == np.bincount(bins, minlength=15).tolist()
        for b in np.flatnonzero(np.bincount(bins, minlength=15)):
            assert diagram["mean_score"][b] == pytest.approx(p[bins == b].mean(), abs=1e-12)
            assert diagram["observed"][b] == pytest.approx(outcome[bins == b].mean(), abs=1e-12)
            assert diagram["observed_low"][b] <= diagram["observed"][b] <= diagram[
                "observed_high"][b]
    # the top-label diagrams stay: confidence max(p, 1 - p) starts at 0.5
    top = comparison["reliability"][0]["diagram"]
    assert sum(top["count"]) == test.sum() and all(
        count == 0 for count, right in zip(top["count"], top["edges"][1:], strict=True)
        if right <= 0.5)


def test_comparison_weighs_the_heldout_rows(client) -> None:
    """On an upload with integer weights the comparison's uncalibrated row (not refitted,
    so the same probabilities in both files) has the measures, max VECE, VECE(v) and
    diagram of the same file with every row repeated by its weight, and variable_ece of
    the repeated held-out rows computed here; the table says it is weighted, with Kish's
    n_eff of the held-out rows; its MLCE is the weighted one of the core."""
    rng = np.random.default_rng(21)
    n = 1500
    hour = rng.integers(0, 24, n).astype(float)
    distance = rng.gamma(3, 300, n).round(1)
    confidence = rng.uniform(0.55, 0.98, n)
    correct = rng.random(n) < np.clip(confidence - 0.01 * hour, 0, 1)
    y_prob = np.where(rng.random(n) < 0.5, confidence, 1 - confidence).round(6)
    predicted = (y_prob >= 0.5).astype(int)
    frame = pd.DataFrame({"y_true": np.where(correct, predicted, 1 - predicted),
                          "y_prob": y_prob, "hour": hour, "distance": distance,
                          "split": np.where(rng.random(n) < 0.5, "calibration", "test")})
    weights = rng.integers(0, 4, n)
    weights[:3] = 1
    repeated = frame.loc[frame.index.repeat(weights)].reset_index(drop=True)
    tables = []
    for name, table in (("weighted.csv", frame.assign(sample_weight=weights)),
                        ("repeated.csv", repeated)):
        dataset = str(upload(client, table.to_csv(index=False).encode(), name).json()["id"])
        tables.append(fit(client, dataset, method="variable_tree",
                          features=["distance"], n_bootstrap=20)["comparison"])
    ours, theirs = tables
    held_out = weights[frame["split"] == "test"].astype(float)
    assert ours["weighted"] is True and theirs["weighted"] is False
    assert ours["n_eff"] == pytest.approx(held_out.sum() ** 2 / np.sum(held_out**2), rel=1e-9)
    assert ours["weights_note"].startswith("weighted (Kish n_eff")
    assert ours["mlce_note"].startswith("weighted: each row's kernel weight")
    test = repeated[repeated["split"] == "test"].reset_index(drop=True)
    by_hand = {name: variable_ece(test[name], test["y_true"], test["y_prob"], kind="numeric")
               for name in ("hour", "distance")}
    first, second = ours["rows"][0]["values"], theirs["rows"][0]["values"]
    for key in ("ece", "smooth_ece", "laplace_kernel_calibration_error", "brier", "nll",
                "accuracy", "max_vece", "vece:distance"):
        field = "plug_in" if "plug_in" in first[key] else "value"
        assert first[key][field] == pytest.approx(second[key][field], abs=1e-9), key
    assert first["max_vece"]["variable"] == second["max_vece"]["variable"]
    assert first["max_vece"]["value"] == pytest.approx(max(by_hand.values()), abs=1e-9)
    assert first["vece:distance"]["value"] == pytest.approx(by_hand["distance"], abs=1e-9)
    # the Brier score of the repeated held-out rows, by hand
    p1 = test["y_prob"].to_numpy()
    brier = np.mean((p1 - test["y_true"]) ** 2 + ((1 - p1) - (1 - test["y_true"])) ** 2)
    assert first["brier"]["value"] == pytest.approx(brier, abs=1e-12)
    low, high = first["vece:distance"]["low"], first["vece:distance"]["high"]
    assert low is not None and low <= high
    ours_diagram = ours["reliability"][0]["diagram"]
    theirs_diagram = theirs["reliability"][0]["diagram"]
    np.testing.assert_allclose(np.array(ours_diagram["observed"], dtype=float),
                               np.array(theirs_diagram["observed"], dtype=float), atol=1e-12)
    # MLCE: the core's weighted LCE on phi fitted to the held-out rows unweighted
    from app.services.comparison import MLCE_GAMMA, _mlce_space
    from calibcore.local import local_calibration

    held = frame[frame["split"] == "test"].reset_index(drop=True)
    phi, _ = _mlce_space(held[["hour", "distance"]])
    assert phi is not None
    mlce = local_calibration(phi, held["y_true"], held["y_prob"], gamma=MLCE_GAMMA,
                             sample_weight=held_out)
    assert first["mlce"]["value"] == pytest.approx(mlce.mlce, abs=1e-12)
    assert first["mlce"]["value"] != pytest.approx(local_calibration(
        phi, held["y_true"], held["y_prob"], gamma=MLCE_GAMMA).mlce, abs=1e-6)
    # the unweighted VECE of the same held-out rows differs: the weights were used
    plain = frame[frame["split"] == "test"]
    assert abs(variable_ece(plain["distance"], plain["y_true"], plain["y_prob"],
                            kind="numeric") - by_hand["distance"]) > 1e-4


def test_weighted_paired_differences_are_weighted_means_resampled_with_weights() -> None:
    """The estimate is sum w d / sum w (by hand); weights of 1 give the unweighted
    intervals exactly; the interval of integer weights is near the repeated rows' one (the
    resamples draw n rows carrying weights, not sum w rows)."""
    rng = np.random.default_rng(5)
    differences = rng.normal(0.1, 1.0, size=(800, 2))
    weights = rng.integers(1, 4, 800).astype(float)
    got = paired_differences(differences, 400, 0, weights)
    for column, (estimate, low, high) in enumerate(got):
        assert estimate == pytest.approx(np.sum(weights * differences[:, column])
                                         / weights.sum(), rel=1e-12)
        assert low < estimate < high
    np.testing.assert_allclose(paired_differences(differences, 50, 0, np.ones(800)),
                               paired_differences(differences, 50, 0), rtol=1e-12)
    repeated = paired_differences(np.repeat(differences, weights.astype(int), axis=0), 400, 0)
    for (_, low, high), (_, their_low, their_high) in zip(got, repeated, strict=True):
        # sum w = ~1,600 repeated rows: narrower than the 800 weighted rows' interval
        assert their_high - their_low < high - low < 2.0 * (their_high - their_low)
