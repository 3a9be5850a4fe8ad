"""REST round trips for hidden heterogeneity and calibration support, against the real core."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_moons
from sklearn.linear_model import LogisticRegression

from app.services.row_columns import load_row_columns
from calibcore.heterogeneity import (
    hidden_heterogeneity,
    hidden_heterogeneity_details,
    recommend_calibration,
)
from calibcore.insights import calibration_support
from tests.app.test_api import assert_error, upload

N_ROWS = 600


def _model() -> LogisticRegression:
    x, y = make_moons(n_samples=2000, noise=0.3, random_state=1)
    return LogisticRegression().fit(x, y)


def moons_frame(seed: int, n_rows: int = N_ROWS, shift: float = 0.0,
                split: bool = True) -> pd.DataFrame:
    """Moons rows scored by one fixed linear model; ``shift`` moves x0 (covariate shift)."""
    x, y = make_moons(n_samples=n_rows, noise=0.3, random_state=seed)
    x = x + np.array([shift, 0.0])
    frame = pd.DataFrame({"row_id": [f"r{seed}-{i}" for i in range(n_rows)], "x0": x[:, 0],
                          "x1": x[:, 1], "y_true": y, "y_prob": _model().predict_proba(x)[:, 1]})
    if split:
        frame["split"] = np.where(np.arange(n_rows) % 2 == 0, "calibration", "test")
    return frame


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def wait_for_job(client, response, seconds: float = 120) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["status"] not in ("queued", "running"):
            return dict(job)
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish in {seconds} s")


def standardized(frame: pd.DataFrame) -> np.ndarray:
    values = frame[["x0", "x1"]].to_numpy(dtype=float)
    return (values - values.mean(axis=0)) / values.std(axis=0)


def as_arrays(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    positive = frame["y_prob"].to_numpy()
    proba = np.column_stack([1 - positive, positive])
    cal = np.flatnonzero(frame["split"].to_numpy() == "calibration")
    test = np.flatnonzero(frame["split"].to_numpy() == "test")
    return proba, frame["y_true"].to_numpy(), cal, test


@pytest.fixture
def moons(client) -> tuple[str, pd.DataFrame]:  # type: ignore[no-untyped-def]
    frame = moons_frame(seed=0)
    response = upload(client, csv_bytes(frame), "moons.csv")
    assert response.status_code == 201, response.text
    return response.json()["id"], frame


def test_hh_job_equals_the_core_on_the_same_rows(client, moons) -> None:
    dataset_id, frame = moons
    job = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset_id}/heterogeneity",
                                           json={"sample": 120, "radius": 0.12,
                                                 "random_state": 3}))
    assert job["status"] == "succeeded", job
    result = job["result"]
    proba, labels, cal, test = as_arrays(frame)
    rows = np.asarray(result["rows"]["row"])
    assert rows.size == 120 == result["n_evaluated"] and np.unique(rows).size == 120
    assert set(rows) <= set(test) and result["sampled"] and result["n_candidates"] == test.size
    features = standardized(frame)
    expected = hidden_heterogeneity(features[cal], labels[cal], proba[cal], proba[rows],
                                    radius=0.12, random_state=3)
    assert np.array_equal(np.asarray(result["rows"]["hh"]), expected)
    assert expected.max() > 0 and result["warning"] is None
    assert result["mean_hh"] == pytest.approx(expected.mean())
    assert result["rows"]["id"] == frame["row_id"].to_numpy()[rows].tolist()
    assert np.allclose(result["rows"]["confidence"], proba[rows].max(axis=1))
    advice = recommend_calibration(expected, cal.size)
    assert result["recommendation"]["recommend"] == advice.recommend
    assert result["recommendation"]["reason"] == advice.reason
    assert len(result["rows"]["x"]) == 120 and np.isfinite(result["rows"]["y"]).all()
    assert any("seeded sample of 120 of the 300 test rows" in n for n in result["notes"])

    saved = load_row_columns(client.app.state.services.store, dataset_id, ["hh"])["hh"]
    assert len(saved) == N_ROWS and saved.notna().sum() == 120
    assert np.array_equal(saved.to_numpy()[rows], expected)


def test_the_hh_job_says_when_it_stores_its_rows(client, moons, monkeypatch) -> None:
    # after the forests, a 150,000-row result took 3 s to prepare, store and save, which
    # the job spent on 'summarizing' alone: each step now says what it does
    from app.jobs.job import Progress

    dataset_id, _ = moons
    seen: list[str] = []
    update = Progress.update

    def recorded(self: Progress, fraction: float, message: str | None = None,
                 **detail: Any) -> None:
        if message is not None:
            seen.append(message)
        update(self, fraction, message, **detail)

    monkeypatch.setattr(Progress, "update", recorded)
    job = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset_id}/heterogeneity",
                                           json={"sample": 100, "random_state": 11}))
    assert job["status"] == "succeeded", job
    last = seen[seen.index("summarizing"):]
    assert last[:4] == ["summarizing", "preparing the 100 rows for the page",
                        "storing the result (100 rows)",
                        "saving each row's HH for the other pages"]


@pytest.mark.slow
def test_hh_on_a_calibration_sample_with_shared_forests_equals_the_core(client, moons) -> None:
    """calibration_sample draws the forests' rows (seeded, as the test rows are drawn) and
    grid shares forests; both are said in the notes and equal the core on those rows."""
    dataset_id, frame = moons
    job = wait_for_job(client, client.post(
        f"/api/v1/datasets/{dataset_id}/heterogeneity",
        json={"sample": 80, "random_state": 2, "calibration_sample": 100, "grid": 0.05}))
    assert job["status"] == "succeeded", job
    result = job["result"]
    proba, labels, cal, _ = as_arrays(frame)
    drawn = np.sort(np.random.default_rng(2).choice(cal, size=100, replace=False))
    rows = np.asarray(result["rows"]["row"])
    expected = hidden_heterogeneity_details(standardized(frame)[drawn], labels[drawn],
                                            proba[drawn], proba[rows], random_state=2,
                                            grid=0.05)
    assert np.array_equal(np.asarray(result["rows"]["hh"]), expected.values)
    assert np.unique(expected.neighbourhood).size < 80
    assert (result["n_calibration"], result["n_calibration_used"]) == (cal.size, 100)
    assert result["grid"] == 0.05
    assert result["recommendation"]["n_calibration"] == cal.size
    assert any(f"seeded sample of 100 of the {cal.size:,} calibration rows" in note
               for note in result["notes"])
    assert any("multiple of 0.05 share one neighbourhood" in note for note in result["notes"])
    every = wait_for_job(client, client.post(
        f"/api/v1/datasets/{dataset_id}/heterogeneity",
        json={"sample": 80, "random_state": 2, "calibration_sample": "all"}))["result"]
    assert every["n_calibration_used"] == cal.size and every["grid"] is None
    assert not any("calibration rows (random_state" in note for note in every["notes"])


def test_hh_is_cached_per_parameter_set(client, moons) -> None:
    dataset_id, _ = moons
    url = f"/api/v1/datasets/{dataset_id}/heterogeneity"
    first = wait_for_job(client, client.post(url, json={"sample": 40}))
    again = wait_for_job(client, client.post(url, json={"sample": 40}))
    other = wait_for_job(client, client.post(url, json={"sample": 40, "random_state": 1}))
    assert first["result"] == again["result"]
    assert other["result"]["rows"]["row"] != first["result"]["rows"]["row"]
    store = client.app.state.services.store
    assert len(list(store.root.glob(f"**/{dataset_id}.hh.*"))) == 2


def test_a_radius_too_small_for_two_classes_is_said(client, moons) -> None:
    dataset_id, _ = moons
    job = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset_id}/heterogeneity",
                                           json={"sample": 30, "radius": 1e-6}))
    result = job["result"]
    assert result["n_forests"] == 0 and result["mean_hh"] == 0
    assert "radius 1e-06 held two classes" in result["warning"]


def test_hh_all_rows_without_split_uses_a_half_split(client) -> None:
    frame = moons_frame(seed=4, n_rows=200, split=False)
    dataset_id = upload(client, csv_bytes(frame)).json()["id"]
    job = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset_id}/heterogeneity",
                                           json={"sample": "all"}))
    result = job["result"]
    assert result["n_evaluated"] == 100 == result["n_calibration"] and not result["sampled"]
    assert "seeded half split" in result["scheme"]


@pytest.mark.slow
def test_support_job_equals_the_core_and_flags_a_shifted_batch(client, moons) -> None:
    dataset_id, frame = moons
    same = upload(client, csv_bytes(moons_frame(seed=7)), "same.csv").json()["id"]
    shifted = upload(client, csv_bytes(moons_frame(seed=8, shift=3.0, split=False)),
                     "shifted.csv").json()["id"]
    url = f"/api/v1/datasets/{dataset_id}/support"

    result = wait_for_job(client, client.post(url, json={"batch_dataset_id": same}))["result"]
    proba, labels, cal, test = as_arrays(frame)
    features = standardized(frame)
    batch = moons_frame(seed=7)
    batch_features = (batch[["x0", "x1"]].to_numpy() - frame[["x0", "x1"]].to_numpy().mean(0)) \
        / frame[["x0", "x1"]].to_numpy().std(0)
    batch_proba = np.column_stack([1 - batch["y_prob"], batch["y_prob"]])
    expected = calibration_support(
        features[cal], labels[cal], proba[cal], np.vstack([features[test], batch_features]),
        np.vstack([proba[test], batch_proba]), n_folds=5, random_state=0)
    assert np.allclose(result["calibration"]["support"], expected.reference, rtol=1e-12)
    assert np.allclose(result["test"]["support"], expected.values[:test.size], rtol=1e-12)
    assert np.allclose(result["batch"]["support"], expected.values[test.size:], rtol=1e-12)
    assert result["calibration"]["row"] == cal.tolist()
    assert not result["batch"]["shift"]["shifted"], result["batch"]["shift"]
    assert not result["test_shift"]["shifted"]
    assert result["batch"]["shift"]["test"] == "two-sample Kolmogorov-Smirnov"
    histogram = result["histogram"]
    assert sum(histogram["calibration"]["count"]) == cal.size
    assert sum(histogram["batch"]["count"]) == N_ROWS
    lowest = result["lowest"]
    assert len(lowest) == 10 and lowest[0]["support"] == pytest.approx(
        expected.values[:test.size].min())
    assert [row["support"] for row in lowest] == sorted(row["support"] for row in lowest)
    assert set(lowest[0]) >= {"id", "label", "predicted", "support"}
    assert lowest[0]["id"] == frame["row_id"][lowest[0]["row"]]

    moved = wait_for_job(client, client.post(url, json={"batch_dataset_id": shifted}))
    shift = moved["result"]["batch"]["shift"]
    assert shift["shifted"] and shift["p_value"] < 0.01, shift
    assert "Covariate-shift warning" in shift["message"]

    saved = load_row_columns(client.app.state.services.store, dataset_id, ["support"])
    assert saved["support"].notna().all()
    assert np.allclose(saved["support"].to_numpy()[cal], expected.reference)


def test_support_without_split_is_cross_fitted_on_every_row(client) -> None:
    frame = moons_frame(seed=5, n_rows=200, split=False)
    dataset_id = upload(client, csv_bytes(frame)).json()["id"]
    result = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset_id}/support"))["result"]
    assert result["n_calibration"] == 200 and result["n_test"] == 0
    assert result["test_shift"] is None and result["batch"] is None
    assert all(row["set"].startswith("calibration") for row in result["lowest"])


def test_categorical_and_missing_features_are_encoded_and_said(client) -> None:
    frame = moons_frame(seed=6, n_rows=300)
    frame["group"] = np.where(frame["x0"] > 0.5, "right", "left")
    frame.loc[::17, "x1"] = np.nan
    dataset_id = upload(client, csv_bytes(frame)).json()["id"]
    job = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset_id}/heterogeneity",
                                           json={"sample": 30, "features": ["x1", "group"]}))
    assert job["status"] == "succeeded", job
    notes = " ".join(job["result"]["notes"])
    assert "one-hot encoded: group" in notes and "missing values in 'x1' were imputed" in notes
    # the forests' encoding and the map's embedding both say so; the page says it once
    assert notes.count("one-hot encoded:") == 1 and notes.count("were imputed") == 1
    assert job["result"]["encoded_features"] == ["x1", "group=left", "group=right"]


@pytest.mark.parametrize("body", [
    {"radius": 0}, {"radius": 1.5}, {"sample": 0}, {"sample": "some"}, {"random_state": -1},
    {"features": []}, {"unknown": 1}, {"calibration_sample": 0}, {"grid": 0},
    {"grid": 2}, {"grid": "coarse"}, {"grid": True}, {"grid": 0.2, "radius": 0.1},
])
@pytest.mark.slow
def test_bad_heterogeneity_params_are_422(client, moons, body) -> None:
    dataset_id, _ = moons
    assert_error(client.post(f"/api/v1/datasets/{dataset_id}/heterogeneity", json=body), 422,
                 "invalid_request")


def test_bad_references_are_4xx_with_the_reason(client, moons) -> None:
    dataset_id, frame = moons
    hh = f"/api/v1/datasets/{dataset_id}/heterogeneity"
    support = f"/api/v1/datasets/{dataset_id}/support"
    error = assert_error(client.post(hh, json={"features": ["x9"]}), 409, "unknown_feature")
    assert "'x0', 'x1'" in error["message"] and error["details"]["column"] == "x9"
    assert_error(client.post("/api/v1/datasets/ds_missing/heterogeneity", json={}), 404,
                 "not_found")
    assert_error(client.post(support, json={"batch_dataset_id": dataset_id}), 422,
                 "invalid_parameters")
    assert_error(client.post(support, json={"batch_dataset_id": "ds_gone"}), 404, "not_found")
    other = frame.rename(columns={"x1": "z"})
    other_id = upload(client, csv_bytes(other)).json()["id"]
    error = assert_error(client.post(support, json={"batch_dataset_id": other_id}), 422,
                         "batch_mismatch")
    assert "'x1'" in error["message"]
    for body in ({"n_folds": 1}, {"alpha": 0}, {"n_lowest": 0}):
        assert_error(client.post(support, json=body), 422, "invalid_request")


@pytest.mark.slow
def test_a_running_hh_job_can_be_cancelled(client, shared_data) -> None:
    dataset_id = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    response = client.post(f"/api/v1/datasets/{dataset_id}/heterogeneity",
                           json={"sample": "all"})
    job_id = response.json()["job_id"]
    deadline = time.monotonic() + 60
    while client.get(f"/api/v1/jobs/{job_id}").json()["progress"] < 0.06:
        assert time.monotonic() < deadline, "the job never reached the local forests"
        time.sleep(0.05)
    assert client.delete(f"/api/v1/jobs/{job_id}").status_code == 200
    job = wait_for_job(client, response, seconds=60)
    assert job["status"] == "cancelled", job
    store = client.app.state.services.store
    assert not list(store.root.glob(f"**/{dataset_id}.hh.*"))


def test_an_unlabeled_batch_is_compared_and_refused_elsewhere(client, moons) -> None:
    dataset_id, _ = moons
    unlabeled = moons_frame(seed=8, shift=3.0, split=False).drop(columns="y_true")
    created = client.post("/api/v1/datasets", files={"file": ("batch.csv",
                                                              csv_bytes(unlabeled))},
                          data={"unlabeled": "true"})
    assert created.status_code == 201, created.text
    batch_id = created.json()["id"]
    assert created.json()["labelled"] is False and created.json()["classes"] == ["0", "1"]
    assert_error(client.get(f"/api/v1/datasets/{batch_id}/metrics"), 422, "no_labels")
    url = f"/api/v1/datasets/{dataset_id}/support"
    result = wait_for_job(client, client.post(url, json={"batch_dataset_id": batch_id}))
    shift = result["result"]["batch"]["shift"]
    assert shift["shifted"] and shift["p_value"] < 0.01
    assert all(row["label"] is None for row in result["result"]["batch"].get("lowest", []))


def test_the_recommendation_rests_on_the_held_out_comparison_when_there_is_one(
        client, moons) -> None:
    dataset_id, _ = moons
    url = f"/api/v1/datasets/{dataset_id}/heterogeneity"
    before = wait_for_job(client, client.post(url, json={"sample": 40}))["result"]
    assert before["recommendation"]["basis"] == "hidden_heterogeneity"
    assert "No recalibrators have been compared" in before["recommendation"]["basis_note"]

    fitted = client.post(f"/api/v1/datasets/{dataset_id}/recalibrations",
                         json={"methods": ["beta", "swc"]})
    assert fitted.status_code == 201, fitted.text
    nll = {r["method"]: r["after"]["nll"] for r in fitted.json()["recalibrations"]}
    best = min(nll, key=nll.__getitem__)

    advice = wait_for_job(client, client.post(url, json={"sample": 40}))["result"][
        "recommendation"]
    assert advice["basis"] == "held_out" and advice["best"]["method"] == best
    assert [entry["nll"] for entry in advice["held_out"]] == sorted(nll.values())
    assert advice["recommend"] == ("local" if best == "swc" else "global")
    assert "Rests on the held-out comparison of 2 recalibrator(s)" in advice["basis_note"]
    assert advice["best"]["name"] in advice["basis_note"]
    assert advice["mean_hh"] == before["recommendation"]["mean_hh"]  # HH's numbers kept
    assert advice["hh_agrees"] == (before["recommendation"]["recommend"] == advice["recommend"])


def test_held_out_advice_says_when_hh_disagrees() -> None:
    from app.services.calibration_advice import advise

    hh = {"recommend": "local", "mean_hh": 0.033, "hh_threshold": 0.03,
          "min_calibration_rows": 500, "n_rows": 500, "n_calibration": 5000, "reason": "..."}
    scored = [{"method": method, "name": name, "scheme": "split column", "n_heldout": 900,
               "before": {"nll": 0.25}, "after": {"nll": nll}}
              for method, name, nll in [("swc", "SWC", 0.227), ("swc_hh", "SWC-HH", 0.442),
                                        ("beta", "Beta calibration", 0.219)]]
    advice = advise(hh, scored)
    assert advice["recommend"] == "global" and advice["best"]["name"] == "Beta calibration"
    assert not advice["hh_agrees"] and "held-out rows say otherwise" in advice["basis_note"]
    worse = [{**r, "after": {"nll": 0.3}} for r in scored]
    assert advise(hh, worse)["recommend"] == "none"


@pytest.fixture
def weighted_moons(client) -> tuple[str, pd.DataFrame, np.ndarray]:  # type: ignore[no-untyped-def]
    frame = moons_frame(seed=0)
    weights = np.random.default_rng(4).integers(0, 4, N_ROWS).astype(float)
    frame["sample_weight"] = weights
    response = upload(client, csv_bytes(frame), "weighted_moons.csv")
    assert response.status_code == 201, response.text
    assert response.json()["weighted"] is True
    return response.json()["id"], frame, weights


def test_hh_of_a_weighted_dataset_is_weighted(client, weighted_moons) -> None:
    """A weight column reaches the local forests and the summaries, with Kish's n_eff."""
    dataset_id, frame, weights = weighted_moons
    job = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset_id}/heterogeneity",
                                           json={"sample": 60, "radius": 0.12,
                                                 "random_state": 3}))
    assert job["status"] == "succeeded", job
    result = job["result"]
    proba, labels, cal, _ = as_arrays(frame)
    rows = np.asarray(result["rows"]["row"])
    features = standardized(frame)
    expected = hidden_heterogeneity(features[cal], labels[cal], proba[cal], proba[rows],
                                    radius=0.12, random_state=3, sample_weight=weights[cal])
    assert np.array_equal(np.asarray(result["rows"]["hh"]), expected)
    unweighted = hidden_heterogeneity(features[cal], labels[cal], proba[cal], proba[rows],
                                      radius=0.12, random_state=3)
    assert not np.array_equal(expected, unweighted)
    w = weights[rows]
    assert result["mean_hh"] == pytest.approx(np.sum(w * expected) / np.sum(w), rel=1e-12)
    assert result["share_positive"] == pytest.approx(np.sum(w * (expected > 0)) / np.sum(w))
    repeated = np.repeat(expected, w.astype(int))  # integer weights: the repeated rows
    assert result["median_hh"] == np.quantile(repeated, 0.5, method="inverted_cdf")
    n_eff = w.sum() ** 2 / (w**2).sum()
    assert result["weighted"] is True and result["n_eff"] == pytest.approx(n_eff)
    assert result["weights_note"] == f"weighted (Kish n_eff = {n_eff:,.0f} of 60 rows)"



def test_support_of_a_weighted_dataset_sums_the_weights(client, weighted_moons) -> None:
    dataset_id, frame, weights = weighted_moons
    proba, labels, cal, _ = as_arrays(frame)
    features = standardized(frame)
    job = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset_id}/support",
                                           json={"n_folds": 2}))
    assert job["status"] == "succeeded", job
    support = job["result"]
    test = np.flatnonzero(frame["split"].to_numpy() == "test")
    expected_support = calibration_support(features[cal], labels[cal], proba[cal],
                                           features[test], proba[test], n_folds=2,
                                           sample_weight=weights[cal])
    assert np.allclose(support["test"]["support"], expected_support.values, rtol=1e-12)
    assert support["weighted"] is True and "Kish n_eff" in support["weights_note"]
