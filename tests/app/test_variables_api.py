"""REST round trips of variable-based calibration (Kelly & Smyth 2023) against the real core."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from app.services import variables
from calibcore.variable import loess_curves, rank_variables, variable_bins
from tests.app.test_api import assert_error, upload

FEATURES = ["student", "balance", "income"]


@pytest.fixture
def default_nb_frame(shared_data) -> pd.DataFrame:
    return pd.read_csv(shared_data / "default_nb.csv")


@pytest.fixture
def dataset_id(client, shared_data) -> str:
    response = upload(client, (shared_data / "default_nb.csv").read_bytes(), "default_nb.csv")
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def _wait_for_job(client, job_id: str, seconds: float = 120) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish in {seconds} s")


def _assert_matches_core(body: dict, expected: pd.DataFrame) -> None:
    assert [row["variable"] for row in body["variables"]] == list(expected["variable"])
    for row, (_, reference) in zip(body["variables"], expected.iterrows(), strict=True):
        assert row["kind"] == reference["kind"]
        assert row["n"] == reference["n"] and row["n_missing"] == reference["n_missing"]
        for key in ("vece", "vce_max", "p_value"):
            assert row[key] == pytest.approx(reference[key], rel=1e-12, abs=1e-15), key
        assert row["v_star"] == pytest.approx(float(reference["v_star"]), rel=1e-12)
        assert row["significant"] == (reference["p_value"] < 0.05)


def test_ranking_is_sorted_and_matches_rank_variables(client, dataset_id,
                                                      default_nb_frame) -> None:
    response = client.get(f"/api/v1/datasets/{dataset_id}/variables")
    assert response.status_code == 200, response.text
    body = response.json()
    vece = [row["vece"] for row in body["variables"]]
    assert vece == sorted(vece, reverse=True) and len(vece) == 3
    assert body["n"] == 7000 and body["subset"] == "all" and body["cached"] is False
    assert body["min_p_value"] == pytest.approx(1 / 201)
    expected = rank_variables(default_nb_frame[FEATURES], default_nb_frame["y_true"],
                              default_nb_frame["y_prob"])
    _assert_matches_core(body, expected)
    kinds = {row["variable"]: row["kind"] for row in body["variables"]}
    assert kinds == {"student": "categorical", "balance": "numeric", "income": "numeric"}


def test_ranking_on_test_rows_with_other_parameters(client, dataset_id,
                                                    default_nb_frame) -> None:
    params = {"subset": "test", "n_bins": 7, "n_permutations": 50, "span": 0.5,
              "n_points": 120}
    body = client.get(f"/api/v1/datasets/{dataset_id}/variables", params=params).json()
    rows = default_nb_frame[default_nb_frame["split"] == "test"]
    expected = rank_variables(rows[FEATURES], rows["y_true"], rows["y_prob"], n_bins=7,
                              n_permutations=50, span=0.5, n_points=120)
    assert body["n"] == len(rows) == 3474 and body["n_bins"] == 7
    _assert_matches_core(body, expected)


def test_ranking_is_cached_per_parameter_set_and_deleted_with_the_dataset(
        client, dataset_id) -> None:
    url = f"/api/v1/datasets/{dataset_id}/variables"
    first = client.get(url).json()
    again = client.get(url).json()
    assert first["cached"] is False and again["cached"] is True
    assert again["variables"] == first["variables"]
    other = client.get(url, params={"n_bins": 5}).json()
    assert other["cached"] is False and other["n_bins"] == 5
    store = client.app.state.services.store
    cached = list((store.root / "documents").glob(f"{dataset_id}.variables.*.json"))
    assert len(cached) == 2
    assert client.delete(f"/api/v1/datasets/{dataset_id}").status_code == 204
    assert not list((store.root / "documents").glob(f"{dataset_id}.variables.*"))


def test_async_ranking_runs_as_a_job_and_then_is_cached(client, dataset_id) -> None:
    url = f"/api/v1/datasets/{dataset_id}/variables"
    response = client.get(url, params={"async": "true", "n_permutations": 100})
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    again = client.get(url, params={"async": "true", "n_permutations": 100})
    if again.status_code == 202:  # still running: the same job, not a second one
        assert again.json()["job_id"] == job_id
    job = _wait_for_job(client, job_id)
    assert job["status"] == "succeeded" and job["progress"] == 1.0
    assert len(job["result"]["variables"]) == 3
    cached = client.get(url, params={"n_permutations": 100})
    assert cached.status_code == 200 and cached.json()["cached"] is True
    assert cached.json()["variables"] == job["result"]["variables"]


def test_large_ranking_returns_202_and_reports_progress(client, dataset_id,
                                                        monkeypatch) -> None:
    monkeypatch.setattr(variables, "SYNC_WORK", 1000)  # 7,000 rows x 3 variables is "large"
    response = client.get(f"/api/v1/datasets/{dataset_id}/variables",
                          params={"n_permutations": 20})
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["kind"] == "variables" and body["status"] in ("queued", "running", "succeeded")
    job = _wait_for_job(client, body["job_id"])
    assert job["status"] == "succeeded", job
    assert job["message"] == "done" and job["result"]["n_permutations"] == 20
    described = client.get("/openapi.json").json()["paths"][
        "/api/v1/datasets/{dataset_id}/variables"]["get"]
    assert "202" in described["responses"] and "job_id" in described["description"]


def test_many_variables_run_as_a_job_that_can_be_cancelled(client, shared_data) -> None:
    digits = upload(client, (shared_data / "digits_svm.csv").read_bytes(), "digits.csv").json()
    response = client.get(f"/api/v1/datasets/{digits['id']}/variables")
    assert response.status_code == 202, response.text  # 64 variables: about 10 s of work
    job_id = response.json()["job_id"]
    assert client.delete(f"/api/v1/jobs/{job_id}").status_code == 200
    job = _wait_for_job(client, job_id)
    assert job["status"] == "cancelled" and job["result"] is None
    restarted = client.get(f"/api/v1/datasets/{digits['id']}/variables")
    assert restarted.status_code == 202 and restarted.json()["job_id"] != job_id
    client.delete(f"/api/v1/jobs/{restarted.json()['job_id']}")


def test_numeric_curves_match_loess_curves(client, dataset_id, default_nb_frame) -> None:
    response = client.get(f"/api/v1/datasets/{dataset_id}/variables/balance",
                          params={"span": 0.5, "n_points": 150, "n_bins": 8})
    assert response.status_code == 200, response.text
    body = response.json()
    frame = default_nb_frame
    expected = loess_curves(frame["balance"], frame["y_true"], frame["y_prob"], span=0.5,
                            n_points=150)
    curves = body["curves"]
    assert body["kind"] == "numeric" and body["n"] == 7000 and body["n_missing"] == 0
    for key in ("x", "error", "error_low", "error_high", "predicted_error",
                "predicted_error_low", "predicted_error_high", "histogram_edges"):
        np.testing.assert_allclose(curves[key], getattr(expected, key), rtol=1e-12,
                                   atol=1e-15, err_msg=key)
    assert len(curves["x"]) == 150
    assert curves["histogram_counts"] == expected.histogram_counts.tolist()
    assert body["vce_max"] == pytest.approx(expected.vce_max, rel=1e-12)
    assert body["v_star"] == pytest.approx(expected.v_star, rel=1e-12)
    assert body["vce_max"] == pytest.approx(np.max(np.abs(
        np.asarray(curves["error"]) - np.asarray(curves["predicted_error"]))))
    bins = variable_bins(frame["balance"], frame["y_true"], frame["y_prob"], n_bins=8)
    assert body["bins"]["n"] == bins["n"].tolist() and sum(body["bins"]["n"]) == 7000
    np.testing.assert_allclose(body["bins"]["gap"], bins["gap"], rtol=1e-12, atol=1e-15)
    assert body["vece"] == pytest.approx(float(np.sum(bins["n"] * np.abs(bins["gap"])) / 7000))


def test_curves_of_test_rows_default_parameters(client, dataset_id, default_nb_frame) -> None:
    body = client.get(f"/api/v1/datasets/{dataset_id}/variables/income",
                      params={"subset": "test"}).json()
    rows = default_nb_frame[default_nb_frame["split"] == "test"]
    expected = loess_curves(rows["income"], rows["y_true"], rows["y_prob"])
    assert body["n"] == 3474 and len(body["curves"]["x"]) == 500 and body["span"] == 0.8
    np.testing.assert_allclose(body["curves"]["error"], expected.error, rtol=1e-12, atol=1e-15)


def test_range_widens_the_curves_to_the_quantiles_or_extremes(client, dataset_id,
                                                             default_nb_frame) -> None:
    balance = default_nb_frame["balance"].to_numpy()
    url = f"/api/v1/datasets/{dataset_id}/variables/balance"
    default = client.get(url, params={"n_points": 50}).json()
    assert default["curve_range"] == "5-95" and default["curves"]["curve_range"] == "5-95"
    expected = {"5-95": np.quantile(balance, [0.05, 0.95]),
                "1-99": np.quantile(balance, [0.01, 0.99]),
                "all": [balance.min(), balance.max()]}
    for curve_range, (low, high) in expected.items():
        body = client.get(url, params={"n_points": 50, "range": curve_range}).json()
        x = body["curves"]["x"]
        assert body["curve_range"] == curve_range
        assert (x[0], x[-1]) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
        assert sum(body["curves"]["histogram_counts"]) == np.sum((balance >= low)
                                                                 & (balance <= high))
    assert default["curves"]["x"] == client.get(url, params={"n_points": 50,
                                                             "range": "5-95"}).json()["curves"]["x"]
    # a categorical variable has no curves; the range is accepted and changes nothing
    student = client.get(f"/api/v1/datasets/{dataset_id}/variables/student",
                         params={"range": "all"}).json()
    assert student["curves"] is None and student["kind"] == "categorical"


def test_categorical_variable_returns_the_per_category_table(client, dataset_id,
                                                             default_nb_frame) -> None:
    body = client.get(f"/api/v1/datasets/{dataset_id}/variables/student").json()
    frame = default_nb_frame
    expected = variable_bins(frame["student"], frame["y_true"], frame["y_prob"],
                             kind="categorical")
    assert body["kind"] == "categorical" and body["curves"] is None
    table = body["bins"]
    assert table["bin"] == [0, 1] and table["n"] == expected["n"].tolist() == [4929, 2071]
    for key in ("error", "error_low", "error_high", "predicted_error", "predicted_error_low",
                "predicted_error_high", "gap"):
        np.testing.assert_allclose(table[key], expected[key], rtol=1e-12, err_msg=key)
    assert all(low <= value <= high for low, value, high in
               zip(table["error_low"], table["error"], table["error_high"], strict=True))
    assert body["vce_max"] == pytest.approx(np.max(np.abs(expected["gap"])))
    assert body["v_star"] == 1
    ranking = client.get(f"/api/v1/datasets/{dataset_id}/variables").json()
    row = next(r for r in ranking["variables"] if r["variable"] == "student")
    assert row["vece"] == pytest.approx(body["vece"], rel=1e-12)
    assert row["vce_max"] == pytest.approx(body["vce_max"], rel=1e-12)


def test_missing_values_are_left_out_and_counted(client, default_nb_frame) -> None:
    frame = default_nb_frame.copy()
    frame["income"] = frame["income"].astype(float)
    frame.loc[::7, "income"] = np.nan  # 1,000 rows
    dataset = upload(client, _csv(frame), "missing.csv").json()
    ranking = client.get(f"/api/v1/datasets/{dataset['id']}/variables").json()
    income = next(r for r in ranking["variables"] if r["variable"] == "income")
    assert income["n"] == 6000 and income["n_missing"] == 1000
    detail = client.get(f"/api/v1/datasets/{dataset['id']}/variables/income").json()
    assert detail["n"] == 6000 and detail["n_missing"] == 1000
    kept = frame.dropna(subset=["income"])
    expected = loess_curves(kept["income"], kept["y_true"], kept["y_prob"])
    assert detail["vce_max"] == pytest.approx(expected.vce_max, rel=1e-12)


@pytest.mark.parametrize(("path", "params"), [
    ("", {"n_bins": 0}),
    ("", {"n_permutations": -1}),
    ("", {"span": 0}),
    ("", {"subset": "everything"}),
    ("", {"n_points": 3}),
    ("/balance", {"span": "wide"}),
    ("/balance", {"span": -0.5}),
    ("/balance", {"n_points": 100_000}),
    ("/balance", {"subset": "holdout"}),
    ("/balance", {"range": "0-100"}),
])
def test_bad_parameters_are_422(client, dataset_id, path, params) -> None:
    response = client.get(f"/api/v1/datasets/{dataset_id}/variables{path}", params=params)
    error = assert_error(response, 422, "invalid_request")
    assert next(iter(params)) in error["message"]


def test_span_too_small_for_the_rows_is_422(client, dataset_id) -> None:
    response = client.get(f"/api/v1/datasets/{dataset_id}/variables/balance",
                          params={"span": 1e-4})
    assert_error(response, 422)


def test_unknown_variable_is_404_listing_the_variables(client, dataset_id) -> None:
    response = client.get(f"/api/v1/datasets/{dataset_id}/variables/age")
    error = assert_error(response, 404, "unknown_variable")
    assert error["details"]["variables"] == FEATURES
    assert "student, balance, income" in error["message"]
    label = client.get(f"/api/v1/datasets/{dataset_id}/variables/y_prob")
    assert_error(label, 404, "unknown_variable")
    assert_error(client.get("/api/v1/datasets/ds_missing/variables"), 404, "not_found")
    assert_error(client.get("/api/v1/datasets/ds_missing/variables/balance"), 404, "not_found")


def test_subset_without_split_column_is_422(client, default_nb_frame) -> None:
    frame = default_nb_frame.drop(columns="split").head(500)
    dataset = upload(client, _csv(frame), "nosplit.csv").json()
    for path in ("", "/balance"):
        response = client.get(f"/api/v1/datasets/{dataset['id']}/variables{path}",
                              params={"subset": "test"})
        assert_error(response, 409, "no_split")


def test_dataset_without_features_is_409(client, default_nb_frame) -> None:
    frame = default_nb_frame[["y_true", "y_prob"]].head(300)
    dataset = upload(client, _csv(frame), "nofeatures.csv").json()
    assert_error(client.get(f"/api/v1/datasets/{dataset['id']}/variables"), 409,
                 "no_features")


def test_vece_for_given_probabilities(client, dataset_id, default_nb_frame) -> None:
    services = client.app.state.services
    prediction_set = services.datasets.prediction_set(dataset_id)
    ranking = client.get(f"/api/v1/datasets/{dataset_id}/variables").json()
    for row in ranking["variables"]:
        value = variables.vece_for(prediction_set, row["variable"], prediction_set.proba)
        assert value == pytest.approx(row["vece"], rel=1e-12)
    test_rows = prediction_set.mask("test")
    shrunk = 0.5 + 0.5 * (prediction_set.proba - 0.5)  # other probabilities, same rows
    frame = default_nb_frame[test_rows]
    expected = rank_variables(frame[["income"]], frame["y_true"],
                              0.5 + 0.5 * (frame["y_prob"] - 0.5), n_permutations=0)
    value = variables.vece_for(prediction_set, "income", shrunk, rows=test_rows)
    assert value == pytest.approx(expected["vece"].iloc[0], rel=1e-12)
    with pytest.raises(variables.UnknownVariable):
        variables.vece_for(prediction_set, "age", prediction_set.proba)


def test_ranking_for_report_is_json_ready(client, dataset_id) -> None:
    prediction_set = client.app.state.services.datasets.prediction_set(dataset_id)
    report = variables.ranking_for_report(prediction_set)
    assert report is not None and next(r["variable"] for r in report["variables"]) == "income"
    assert json.loads(json.dumps(report, allow_nan=False)) == report


@pytest.mark.slow
def test_points_of_a_gap_in_the_variable_come_back_as_null(client) -> None:
    """A sentinel 999 beside values in [0, 60]: the points of the gap between them (and
    any where the fit is less certain than one row) are null in the JSON (as loess_curves
    leaves them NaN), the gap is listed, and the largest gap is taken where the curves are
    drawn."""
    rng = np.random.default_rng(3)
    n = 4_000
    p = rng.uniform(0.55, 0.95, n)
    frame = pd.DataFrame({"y_true": (rng.uniform(size=n) < p).astype(int), "y_prob": p.round(6),
                          "days": np.where(rng.uniform(size=n) < 0.1, 999.0,
                                           rng.uniform(0, 60, n).round(2))})
    dataset = upload(client, frame.to_csv(index=False).encode(), "sentinel.csv").json()["id"]
    body = client.get(f"/api/v1/datasets/{dataset}/variables/days",
                      params={"span": 0.3}).json()
    curves = body["curves"]
    left_out = [value is None for value in curves["error"]]
    expected = loess_curves(frame["days"], frame["y_true"], frame["y_prob"], span=0.3)
    assert left_out == np.isnan(expected.error).tolist() and 0 < sum(left_out) < len(left_out)
    assert all(curves[key][i] is None for key in ("error_low", "predicted_error_high")
               for i, out in enumerate(left_out) if out)
    assert body["vce_max"] == pytest.approx(expected.vce_max, rel=1e-12) and body["vce_max"] < 1
    # the gap between 60 and 999 holds no rows: it is reported, and v* is never in it
    assert curves["gaps"] == [[float(frame["days"][frame["days"] < 999].max()), 999.0]]
    assert curves["gaps"] == expected.gaps.tolist()
    assert body["v_star"] <= 60.0 or body["v_star"] == 999.0
