"""Uploaded recalibrator documents: validated against a schema before anything is built."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
from math import prod
from typing import Any

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from calibcore.recalibration import REGISTRY, Recalibrator
from tests.app.test_api import assert_error, upload

JSON = {"content-type": "application/json"}
BASE = {"format": "calibdash-recalibrator", "version": 1, "method": "temperature", "params": {}}
#: Methods that read feature columns, with the ones they read in default_nb.
FEATURES = {"variable_tree": ["balance"], "lore": ["balance", "income"],
            "swc": ["balance", "income"], "swc_hh": ["balance", "income"]}


def temperature(value: Any, **state: Any) -> dict[str, Any]:
    return {**BASE, "state": {"n_classes_": 2, "temperature_": value, **state}}


def array(values: Any, dtype: str = "<f8", shape: list[int] | None = None) -> dict[str, Any]:
    return {"__ndarray__": values, "dtype": dtype,
            "shape": [len(values)] if shape is None else shape}


def nested(depth: int) -> Any:
    value: Any = 1.0
    for _ in range(depth):
        value = [value]
    return value


HOSTILE: dict[str, tuple[Any, str]] = {
    # The reported attacks: a bytes dtype of 200 MB per element, a class count of 5e9.
    "bytes_dtype": (temperature(array(["a"] * 5, "S200000000")), "state.temperature_.dtype"),
    "object_dtype": (temperature(array([1.0], "|O")), "state.temperature_.dtype"),
    "class_count": (temperature(1.0, n_classes_=5_000_000_000), "n_classes_ must be an integer"),
    "shape_product": (temperature(array([], shape=[100_000, 100_000])),
                      "CALIBDASH_MAX_MODEL_VALUES"),
    "short_list": (temperature(array([1.0], shape=[3])), "do not match shape [3]"),
    "ragged_rows": (temperature(array([[1.0, 2.0], [3.0]], shape=[2, 2])),
                    "every row must be a list of 2 values"),
    "three_dimensions": (temperature(array([[[1.0]]], shape=[1, 1, 1])),
                         "state.temperature_.shape"),
    "negative_dimension": (temperature(array([1.0], shape=[-1])), "state.temperature_.shape.0"),
    "text_in_floats": (temperature(array(["1.5"])), "<f8 array holds str values"),
    "int32_overflow": (temperature(array([2**40], "<i4")), "integers outside"),
    "bad_non_finite": (temperature(array([{"__float__": "1e999"}])), "__float__"),
    "huge_integer": (temperature(10**30), "integers outside"),
    "deep_lists": (temperature(nested(100)), "nest more than 32 deep"),
    "unknown_method": ({**temperature(1.0), "method": "magic"}, "unknown recalibration method"),
    # found by schemathesis: a method that is not a string was a 500 (unhashable)
    "method_object": ({**temperature(1.0), "method": {}}, "method: Input should be a valid"),
    "method_list": ({**temperature(1.0), "method": ["temperature"]}, "method: Input should be"),
    "unknown_state": (temperature(1.0, evil_=1), "no fitted attribute evil_"),
    "missing_state": ({**BASE, "state": {"n_classes_": 2}}, "lacks temperature_"),
    "unknown_parameter": ({**temperature(1.0), "params": {"bogus": 1}},
                          "has no parameter bogus"),
    "parameter_count": ({**BASE, "method": "histogram", "params": {"n_bins": 10**9}, "state": {
        "n_classes_": 2, "bin_edges_": [], "bin_values_": []}},
        "params: histogram parameter n_bins must be an integer from 1 to 1,000"),
    "nested_dtype": ({**BASE, "method": "composed", "params": {"steps": None}, "state": {
        "n_classes_": 2, "steps_": [{"__recalibrator__": temperature(array(["a"], "S9"))}]}},
        "state.steps_.0.__recalibrator__.state.temperature_.dtype"),
    "nested_parameter": ({**BASE, "method": "composed", "params": {"steps": [
        {"__unfitted_recalibrator__": {"method": "histogram", "params": {"n_bins": 10**6}}}]},
        "state": {"n_classes_": 2, "steps_": []}}, "n_bins must be an integer"),
    "inputs_not_names": ({**temperature(1.0), "inputs": {"probability_columns": [5],
                                                         "classes": ["0", "1"]}},
                         "inputs.probability_columns.0"),
    "extra_key": ({**temperature(1.0), "pickle": "gASV"}, "pickle: Extra inputs"),
    "other_version": ({**temperature(1.0), "version": 2}, "version"),
    "not_an_object": ([1, 2], "not a calibdash recalibrator document"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", HOSTILE)
def test_each_hostile_document_is_a_quick_422_naming_the_field_with_bounded_memory(
        client, name) -> None:
    document, where = HOSTILE[name]
    body = json.dumps(document).encode()
    # FastAPI builds a route's parameter adapters on its first request: not measured.
    assert client.post("/api/v1/models", json={}).status_code == 422
    tracemalloc.start()
    try:
        started = time.perf_counter()
        response = client.post("/api/v1/models", content=body, headers=JSON)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    error = assert_error(response, 422, "invalid_model")
    assert where in error["message"], error["message"]
    assert peak < 50 * 2**20, f"{peak / 2**20:.0f} MiB allocated"
    assert elapsed < 1.0
    assert client.get("/api/v1/models").json() == []


def test_the_reported_attack_is_a_few_hundred_bytes(client) -> None:
    body = json.dumps(HOSTILE["bytes_dtype"][0]).encode()
    assert len(body) < 400
    error = assert_error(client.post("/api/v1/models", content=body, headers=JSON), 422,
                         "invalid_model")
    assert error["details"]["field"] == "state.temperature_.dtype"
    assert "'<f8', '<f4', '<i8', '<i4' or '|b1'" in error["message"]


@pytest.mark.slow
@pytest.mark.parametrize("body", [b"{oops", b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe"])
def test_unreadable_json_is_a_422_invalid_model(client, body) -> None:
    error = assert_error(client.post("/api/v1/models", content=body, headers=JSON), 422,
                         "invalid_model")
    assert "not readable JSON" in error["message"]


@pytest.fixture
def small(client, shared_data) -> str:  # type: ignore[no-untyped-def]
    frame = pd.read_csv(shared_data / "default_nb.csv").head(300)
    return str(upload(client, frame.to_csv(index=False).encode()).json()["id"])


def exported(client, dataset: str, method: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    fitted = client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                         json={"method": method, "features": FEATURES.get(method)})
    assert fitted.status_code == 201, fitted.text
    return dict(client.get(f"/api/v1/recalibrations/{fitted.json()['id']}/model").json())


def count_values(value: Any) -> int:
    """Numbers the schema counts: every array's shape product and plain lists' lengths."""
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return prod(value["shape"])
        return sum(count_values(v) for v in value.values())
    if isinstance(value, list):
        return len(value) + sum(count_values(v) for v in value)
    return 0


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_every_exported_method_imports(client, small, method) -> None:
    document = exported(client, small, method)
    response = client.post("/api/v1/models", json=document)
    assert response.status_code == 201, response.text
    assert response.json()["method"] == method


@pytest.mark.parametrize("method", ["composed", "variable_tree"])
def test_nested_documents_round_trip_through_import_and_apply(
        client, small, shared_data, method) -> None:
    document = exported(client, small, method)
    model_id = client.post("/api/v1/models", json=document).json()["id"]
    new = pd.read_csv(shared_data / "default_nb.csv").iloc[300:500].drop(columns="y_true")
    response = client.post(f"/api/v1/models/{model_id}/apply",
                           files={"file": ("new.csv", new.to_csv(index=False).encode())})
    assert response.status_code == 200, response.text
    corrected = pd.read_csv(io.BytesIO(response.content))
    features = new[FEATURES[method]].to_numpy(dtype=float) if method in FEATURES else None
    expected = Recalibrator.from_json(document).predict_proba(new["y_prob"].to_numpy(),
                                                              features=features)
    np.testing.assert_allclose(corrected[["calibrated_proba_0", "calibrated_proba_1"]],
                               expected, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_the_value_limit_counts_every_array(settings_factory, shared_data) -> None:
    frame = pd.read_csv(shared_data / "default_nb.csv").head(300)
    with TestClient(create_app(settings_factory()), raise_server_exceptions=False) as client:
        dataset = str(upload(client, frame.to_csv(index=False).encode()).json()["id"])
        document = exported(client, dataset, "isotonic")
    n_values = count_values({"params": document["params"], "state": document["state"]})
    assert n_values > 10
    for limit, status in ((n_values - 1, 422), (n_values, 201)):
        settings = settings_factory(max_model_values=limit)
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            response = client.post("/api/v1/models", json=document)
        assert response.status_code == status, response.text
        if status == 422:
            assert f"limit of {limit:,} (CALIBDASH_MAX_MODEL_VALUES)" in response.text


def test_a_document_over_the_request_limit_is_413(settings_factory) -> None:
    settings = settings_factory(max_request_bytes=1000)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        body = json.dumps(temperature(1.0, pad_=["x" * 2000])).encode()
        error = assert_error(client.post("/api/v1/models", content=body, headers=JSON), 413,
                             "too_large")
    assert "CALIBDASH_MAX_REQUEST_BYTES" in error["message"]
