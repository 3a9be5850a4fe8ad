"""Parameters from users: finite numbers, capped counts, warnings for tiny datasets, and
Dash callback errors logged."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pandas as pd
import pytest

from app.ui.ids import CALLBACK_ERROR
from app.ui.pages import overview
from tests.app.test_api import assert_error, upload

NAN, INF = float("nan"), float("inf")


@pytest.fixture
def small(client, shared_data) -> str:  # type: ignore[no-untyped-def]
    frame = pd.read_csv(shared_data / "default_nb.csv").head(200)
    return str(upload(client, frame.to_csv(index=False).encode()).json()["id"])


def post(client, path: str, body: dict[str, Any]):  # type: ignore[no-untyped-def]
    # json.dumps writes NaN/Infinity tokens, which Python's JSON parser (and so FastAPI's)
    # reads back as floats: exactly what a hostile client can send.
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


@pytest.mark.parametrize("path, body, field", [
    ("lce", {"gamma": NAN}, "gamma"),
    ("lce", {"gamma": INF}, "gamma"),
    ("lce/curve", {"gammas": [0.1, NAN]}, "gammas.1"),
    ("lce/curve", {"gamma_max": INF}, "gamma_max"),
    ("heterogeneity", {"radius": NAN}, "radius"),
    ("heterogeneity", {"radius": -INF}, "radius"),
    ("support", {"alpha": NAN}, "alpha"),
])
def test_nan_and_inf_are_not_finite_numbers_rather_than_out_of_range(
        client, small, path, body, field) -> None:
    error = assert_error(post(client, f"/api/v1/datasets/{small}/{path}", body), 422,
                         "invalid_request")
    assert f"{field} must be a finite number" in error["message"]
    assert "less than" not in error["message"] and "greater than" not in error["message"]


def test_nan_span_query_is_not_a_finite_number(client, small) -> None:
    error = assert_error(client.get(f"/api/v1/datasets/{small}/variables",
                                    params={"span": "nan"}), 422)
    assert "span must be a finite number" in error["message"]


@pytest.mark.parametrize("method, params, message", [
    ("lore", {"gamma": NAN}, "lore parameter gamma must be a finite number"),
    ("swc_hh", {"radius": INF}, "swc_hh parameter radius must be a finite number"),
    ("histogram", {"n_bins": 10**7}, "n_bins must be an integer from 1 to 1,000"),
    ("scaling_binning", {"n_bins": 10**30}, "n_bins must be an integer from 1 to 1,000"),
    ("swc", {"n_estimators": 10**6}, "n_estimators must be an integer from 1 to 1,000"),
    ("swc", {"n_jobs": 10_000}, "n_jobs must be an integer from -1 to 64"),
    ("lore", {"n_components": 10**6}, "n_components must be an integer from 1 to 200"),
    ("lece", {"n_folds": 10**6}, "n_folds must be an integer from 2 to 100"),
    ("variable_tree", {"max_depth": 64}, "max_depth must be an integer from 1 to 20"),
    ("lecd", {"random_state": 2**40}, "random_state must be an integer from 0 to"),
    ("histogram", {"n_bins": 15.5}, "n_bins must be an integer"),
    ("composed", {"steps": ["temperature", {"method": "histogram", "params": {"n_bins": 5000}}]},
     "histogram parameter n_bins must be an integer from 1 to 1,000"),
])
def test_recalibrator_counts_are_capped_and_numbers_finite_before_fitting(
        client, small, method, params, message) -> None:
    path = f"/api/v1/datasets/{small}/recalibrations"
    # FastAPI builds a route's parameter adapters on its first request: not timed.
    assert post(client, path, {"method": "no such method"}).status_code == 422
    started = time.perf_counter()
    response = post(client, path, {"method": method, "params": params})
    error = assert_error(response, 422, "invalid_parameters")
    assert message in error["message"]
    assert time.perf_counter() - started < 2.0  # refused before fitting: no 1e6 trees
    assert client.get(f"/api/v1/datasets/{small}/recalibrations").json() == []


def test_the_largest_accepted_bin_count_still_fits(client, small) -> None:
    response = client.post(f"/api/v1/datasets/{small}/recalibrations",
                           json={"method": "histogram", "params": {"n_bins": 1000}})
    assert response.status_code == 201, response.text
    assert response.json()["params"]["n_bins"] == 1000


@pytest.mark.parametrize("path, body, field", [
    ("heterogeneity", {"sample": 10**30}, "sample"),
    ("lce", {"sample_size": 10**30}, "sample_size"),
    ("lce", {"max_points": 10**12}, "max_points"),
    ("lce", {"bin": 10**6}, "bin"),
    ("recalibrations", {"methods": ["platt"] * 21}, "methods"),
])
def test_row_counts_and_lists_in_request_bodies_are_capped(client, small, path, body,
                                                           field) -> None:
    error = assert_error(post(client, f"/api/v1/datasets/{small}/{path}", body), 422,
                         "invalid_request")
    assert error["message"].startswith(f"invalid request: {field}")


# -- tiny and single-class datasets ----------------------------------------------------
@pytest.fixture
def default_nb(shared_data) -> pd.DataFrame:
    return pd.read_csv(shared_data / "default_nb.csv")


def first_rows(frame: pd.DataFrame, n_zeros: int, n_ones: int, *,
               split: bool = False) -> pd.DataFrame:
    """The first rows of each class of default_nb (without its split column by default)."""
    chosen = pd.concat([frame[frame["y_true"] == 0].head(n_zeros),
                        frame[frame["y_true"] == 1].head(n_ones)])
    return chosen if split else chosen.drop(columns="split")


def warnings_of(client, frame: pd.DataFrame) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    response = upload(client, frame.to_csv(index=False).encode())
    assert response.status_code == 201, response.text
    return str(response.json()["id"]), list(response.json()["warnings"])


def test_a_one_row_file_warns_about_every_diagnostic_and_its_single_class(
        client, default_nb) -> None:
    dataset, warnings = warnings_of(client, first_rows(default_nb, 1, 0))
    rows, classes = warnings
    assert rows.startswith("only 1 row: too few for LCE (2 rows), hidden heterogeneity (4 rows)")
    for needed in ("LOESS curves of the variables (5 rows)", "calibration support (5 calibration "
                   "rows)", "recalibration with cross-fitting (10 rows)",
                   "bootstrap intervals and the smooth ECE mean little below 30 rows"):
        assert needed in rows
    assert classes.startswith("every row has the label '0': recalibration and calibration "
                              "support need rows of at least two classes")
    assert client.get(f"/api/v1/datasets/{dataset}").json()["warnings"] == warnings


def test_a_two_row_file_of_both_classes_warns_about_rows_only(client, default_nb) -> None:
    _, warnings = warnings_of(client, first_rows(default_nb, 1, 1))
    assert len(warnings) == 1 and warnings[0].startswith("only 2 rows: too few for hidden")
    assert "LCE" not in warnings[0]


@pytest.mark.parametrize("path, body, short, enough, needed", [
    ("lce", {}, (1, 0), (1, 1), "LCE (2 rows)"),
    ("heterogeneity", {}, (2, 1), (2, 2), "hidden heterogeneity (4 rows)"),
    ("support", {}, (2, 2), (3, 2), "calibration support (5 calibration rows)"),
    ("recalibrations", {"method": "platt"}, (6, 3), (6, 4),
     "recalibration with cross-fitting (10 rows)"),
])
@pytest.mark.slow
def test_the_stated_minimums_are_the_ones_the_diagnostics_enforce(
        client, default_nb, path, body, short, enough, needed) -> None:
    dataset, warnings = warnings_of(client, first_rows(default_nb, *short))
    assert needed in warnings[0]
    assert_error(client.post(f"/api/v1/datasets/{dataset}/{path}", json=body), 409,
                 "too_few_rows")
    dataset, warnings = warnings_of(client, first_rows(default_nb, *enough))
    assert not any(needed in warning for warning in warnings)
    assert client.post(f"/api/v1/datasets/{dataset}/{path}", json=body).status_code in (201, 202)


def test_a_single_class_file_warns_and_recalibration_refuses_it(client, default_nb) -> None:
    dataset, warnings = warnings_of(client, first_rows(default_nb, 50, 0))
    assert warnings == ["every row has the label '0': recalibration and calibration support "
                        "need rows of at least two classes; the global measures still run."]
    assert_error(client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                             json={"method": "platt"}), 409, "single_class")


def test_single_class_calibration_rows_of_a_split_file_warn(client, default_nb) -> None:
    frame = first_rows(default_nb, 40, 20, split=True)
    frame["split"] = ["calibration" if label == 0 else "test" for label in frame["y_true"]]
    _, warnings = warnings_of(client, frame)
    assert warnings == ["every calibration row has the label '0': recalibration and "
                        "calibration support fit on the calibration rows and need at least two "
                        "classes there."]


def test_enough_rows_of_both_classes_give_no_warning(client, default_nb) -> None:
    _, warnings = warnings_of(client, default_nb.head(200))
    assert warnings == []


# -- Dash callback errors ----------------------------------------------------------------
def broken(*_: Any) -> Any:
    raise RuntimeError("the store is unreadable")


def dash_request(outputs: list[tuple[str, str]], inputs: list[tuple[str, str, Any]],
                 state: tuple[tuple[str, str, Any], ...] = ()) -> dict[str, Any]:
    """The body the browser posts to /_dash-update-component for a multi-output callback."""
    return {"output": ".." + "...".join(f"{i}.{p}" for i, p in outputs) + "..",
            "outputs": [{"id": i, "property": p} for i, p in outputs],
            "inputs": [{"id": i, "property": p, "value": v} for i, p, v in inputs],
            "state": [{"id": i, "property": p, "value": v} for i, p, v in state],
            "changedPropIds": [f"{i}.{p}" for i, p, _ in inputs]}


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_failing_dash_callback_is_logged_with_its_traceback_and_shown(
        client, monkeypatch, caplog, kind) -> None:
    if kind == "async":  # the dataset picker's refresh (an async callback)
        monkeypatch.setattr(client.app.state.services.datasets, "list", broken)
        outputs = [("dataset-picker", "options"), ("dataset-picker", "value")]
        payload = dash_request(outputs, [("url", "href", "http://testserver/")],
                               (("dataset-store", "data", None),))
    else:  # the page router (a plain callback) building a page that fails
        monkeypatch.setattr(overview, "layout", broken)
        outputs = [("page-content", "children"), ("nav", "children")]
        payload = dash_request(outputs, [("url", "pathname", "/overview")])
    with caplog.at_level(logging.ERROR, logger="calibdash"):
        response = client.post("/_dash-update-component", json=payload)
    assert response.status_code == 200, response.text
    shown = json.dumps(response.json()["sideUpdate"][CALLBACK_ERROR])
    assert "RuntimeError" in shown and "server log" in shown
    assert response.json().get("response", {}) == {}  # the outputs are left as they were
    [record] = [r for r in caplog.records if r.name == "calibdash"]
    assert record.levelno == logging.ERROR
    assert ", ".join(f"{i}.{p}" for i, p in outputs) in record.getMessage()
    assert record.exc_info is not None and "the store is unreadable" in caplog.text
    assert "in broken" in caplog.text  # the traceback, down to the failing function
