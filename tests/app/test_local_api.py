"""REST round trips for LCE landscapes and MLCE curves (Luo et al. 2022) against the real core."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest

from app.jobs import Job, Progress
from app.services import local, local_embedding
from calibcore.local import (
    DEFAULT_GAMMAS,
    embed,
    local_calibration,
    local_calibration_error,
    mlce_curve,
    summarize_bins,
)
from tests.app.test_api import assert_error, upload

PROBA = [f"proba_{k}" for k in range(10)]
PIXELS = [f"px{j}" for j in range(64)]


@pytest.fixture(scope="module")
def digits_frame(shared_data) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    return pd.read_csv(shared_data / "digits_svm.csv")


@pytest.fixture
def digits(client, digits_frame) -> str:  # type: ignore[no-untyped-def]
    content = digits_frame.to_csv(index=False).encode()
    return str(upload(client, content, "digits_svm.csv").json()["id"])


def arrays(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    proba = frame[PROBA].to_numpy()
    return frame["label"].to_numpy(), proba / proba.sum(axis=1, keepdims=True)


def wait_for_job(client, response, seconds: float = 300) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["status"] not in ("queued", "running"):
            assert job["status"] == "succeeded", job
            return dict(job["result"])
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish in {seconds} s")


def landscape(client, dataset: str, **body: Any) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return wait_for_job(client, client.post(f"/api/v1/datasets/{dataset}/lce", json=body))


def per_row(result: dict[str, Any], key: str, n_rows: int) -> np.ndarray:
    """A per-row value of the (undecimated) result, in dataset row order."""
    values = np.full(n_rows, np.nan)
    values[np.asarray(result["rows"]["row"])] = result["rows"][key]
    return values


def test_pca_landscape_equals_the_core_on_the_same_embedding(client, digits,
                                                             digits_frame) -> None:
    result = landscape(client, digits, reducer="pca", max_points="all")
    labels, proba = arrays(digits_frame)
    embedding = embed(digits_frame[PIXELS], reducer="pca", n_components=2, random_state=0)
    expected = local_calibration(embedding.coordinates, labels, proba, gamma=0.4)

    assert result["params"]["gamma"] == 0.4 and result["params"]["gamma_default"]
    assert result["n_rows"] == 1197 and result["dimension"] == 2
    assert result["rows"]["n_shown"] == 1197 and not result["rows"]["sampled"]
    np.testing.assert_allclose(per_row(result, "lce", 1197), local_calibration_error(
        embedding.coordinates, labels, proba, gamma=0.4), rtol=0, atol=1e-12)
    np.testing.assert_allclose(per_row(result, "signed_lce", 1197), expected.signed_lce,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(per_row(result, "x", 1197), embedding.map_2d[:, 0], atol=1e-12)
    assert np.all(np.diff(result["rows"]["lce"]) >= 0)  # largest errors drawn last, on top
    assert result["mlce"] == pytest.approx(expected.mlce, abs=1e-12)
    assert result["mean_lce"] == pytest.approx(expected.mean_lce, abs=1e-12)
    rows = np.asarray(result["rows"]["row"])
    assert result["rows"]["label"] == [str(v) for v in labels[rows]]
    assert result["rows"]["prediction"] == [str(v) for v in proba[rows].argmax(axis=1)]
    np.testing.assert_allclose(result["rows"]["confidence"], proba[rows].max(axis=1))
    assert result["worst_row"]["lce"] == pytest.approx(expected.mlce)

    summary = summarize_bins(expected)
    assert [b["count"] for b in result["bins"]] == summary.count.tolist()
    for b in np.flatnonzero(summary.count):
        got, distribution = result["bins"][b], summary.distribution(int(b))
        assert got["gap"] == pytest.approx(distribution.gap, abs=1e-12)
        assert got["mean_lce"] == pytest.approx(distribution.mean_lce, abs=1e-12)
        assert got["cdf"]["n"] == distribution.count
        assert got["cdf"]["cumulative"][-1] == 1.0
        if distribution.count <= local.CDF_POINTS:
            np.testing.assert_allclose(got["cdf"]["lce"], distribution.values, atol=1e-12)
        else:  # evenly spaced quantiles: points of the exact CDF
            positions = np.round(np.asarray(got["cdf"]["cumulative"]) * distribution.count)
            np.testing.assert_allclose(got["cdf"]["lce"],
                                       distribution.values[positions.astype(int) - 1],
                                       atol=1e-12)
    assert any("PCA(2) fitted on 1,197 rows" in note for note in result["notes"])
    assert any("default for this representation" in note for note in result["notes"])


def test_a_weighted_dataset_gets_the_weighted_lce_of_the_core(client, digits_frame) -> None:
    """The weights multiply the kernel weights; phi (PCA) is fitted on the rows unweighted."""
    weights = np.random.default_rng(4).integers(0, 4, len(digits_frame)).astype(float)
    weights[:5] = 1.0
    content = digits_frame.assign(sample_weight=weights).to_csv(index=False).encode()
    dataset = upload(client, content, "digits_weighted.csv").json()["id"]
    result = landscape(client, dataset, reducer="pca", max_points="all")
    labels, proba = arrays(digits_frame)
    embedding = embed(digits_frame[PIXELS], reducer="pca", n_components=2, random_state=0)
    expected = local_calibration(embedding.coordinates, labels, proba, gamma=0.4,
                                 sample_weight=weights)
    unweighted = local_calibration(embedding.coordinates, labels, proba, gamma=0.4)

    n_eff = weights.sum() ** 2 / (weights**2).sum()
    assert result["weighted"] is True and result["n_eff"] == pytest.approx(n_eff, rel=1e-12)
    assert result["weights_note"] == f"weighted (Kish n_eff = {n_eff:,.0f} of 1,197 rows)"
    assert any("multiplied by its weight" in note for note in result["notes"])
    np.testing.assert_allclose(per_row(result, "signed_lce", 1197), expected.signed_lce,
                               rtol=0, atol=1e-12)
    assert result["mlce"] == pytest.approx(expected.mlce, abs=1e-12)
    assert result["mean_lce"] == pytest.approx(expected.mean_lce, abs=1e-12)
    assert abs(result["mean_lce"] - unweighted.mean_lce) > 1e-4  # the weights matter
    summary = summarize_bins(expected)
    filled = summary.count > 0
    assert summary.weight is not None
    assert result["ece"] == pytest.approx(
        np.nansum(summary.weight * summary.gap) / summary.weight.sum(), abs=1e-12)
    for b in np.flatnonzero(filled):
        got = result["bins"][b]
        assert got["weight"] == pytest.approx(weights[expected.bin_index == b].sum())
        assert got["gap"] == pytest.approx(summary.gap[b], abs=1e-12, nan_ok=True)
        assert got["mean_lce"] == pytest.approx(summary.mean_lce[b], abs=1e-12, nan_ok=True)
    assert result["worst_row"]["lce"] == pytest.approx(expected.mlce, abs=1e-12)
    assert weights[result["worst_row"]["row"]] > 0
    curve = wait_for_job(client, client.post(f"/api/v1/datasets/{dataset}/lce/curve",
                                             json={"reducer": "pca", "gammas": [0.4, 5.0]}))
    reference = mlce_curve(embedding.coordinates, labels, proba, gammas=[0.4, 5.0],
                           sample_weight=weights)
    assert curve["weighted"] is True and curve["n_eff"] == pytest.approx(n_eff, rel=1e-12)
    np.testing.assert_allclose(curve["mlce"], reference.mlce, rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve["mean_lce"], reference.mean_lce, rtol=0, atol=1e-12)
    assert curve["ece"] == pytest.approx(reference.ece, abs=1e-12)
    assert curve["mlce"][0] == pytest.approx(result["mlce"], abs=1e-12)


def test_an_unweighted_dataset_carries_no_weights_note(client, digits) -> None:
    result = landscape(client, digits, reducer="pca", gamma=0.3)
    assert result["weighted"] is False and "weights_note" not in result
    assert "weight" not in result["bins"][14]


def test_display_is_decimated_and_one_bin_can_be_asked_for(client, digits) -> None:
    full = landscape(client, digits, reducer="pca", gamma=0.3)
    assert full["rows"]["n_shown"] == 1197  # under the default of 50,000 points
    sample = landscape(client, digits, reducer="pca", gamma=0.3, max_points=100)
    assert sample["rows"]["sampled"] and sample["rows"]["n_shown"] == 100
    assert len(set(sample["rows"]["row"])) == 100 and len(sample["rows"]["x"]) == 100
    assert any("seeded sample of 100 of the 1,197 rows" in n for n in sample["notes"])
    assert sample["mlce"] == full["mlce"]  # the summaries always use every row
    top = landscape(client, digits, reducer="pca", gamma=0.3, bin=14)
    assert top["rows"]["bin"] == 14 and set(top["rows"]["bin_index"]) == {14}
    assert top["rows"]["n_shown"] == top["bins"][14]["count"] == top["rows"]["n_selected"]


@pytest.mark.slow
def test_curve_equals_mlce_curve_with_its_limits(client, digits, digits_frame) -> None:
    gammas = [0.01, 0.2, 5.0]
    curve = wait_for_job(client, client.post(f"/api/v1/datasets/{digits}/lce/curve",
                                             json={"reducer": "pca", "gammas": gammas}))
    labels, proba = arrays(digits_frame)
    embedding = embed(digits_frame[PIXELS], reducer="pca", n_components=2, random_state=0)
    expected = mlce_curve(embedding.coordinates, labels, proba, gammas=gammas)
    assert curve["gammas"] == gammas
    np.testing.assert_allclose(curve["mlce"], expected.mlce, rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve["mean_lce"], expected.mean_lce, rtol=0, atol=1e-12)
    assert curve["mce"] == pytest.approx(expected.mce) and curve["ece"] == pytest.approx(
        expected.ece)
    default = wait_for_job(client, client.post(f"/api/v1/datasets/{digits}/lce/curve",
                                               json={"reducer": "pca"}))
    np.testing.assert_allclose(default["gammas"], DEFAULT_GAMMAS)
    assert default["mlce"][-1] == pytest.approx(default["mce"], abs=0.01)  # Lemma 1
    assert default["mean_lce"][-1] == pytest.approx(default["ece"], abs=0.01)
    grid = wait_for_job(client, client.post(f"/api/v1/datasets/{digits}/lce/curve", json={
        "reducer": "pca", "gamma_min": 0.1, "gamma_max": 10, "n_gammas": 3}))
    np.testing.assert_allclose(grid["gammas"], [0.1, 1.0, 10.0])
    np.testing.assert_allclose(grid["mlce"][1], mlce_curve(
        embedding.coordinates, labels, proba, gammas=[1.0]).mlce[0], atol=1e-12)


@pytest.mark.slow
def test_results_are_cached_and_the_embedding_apart_from_gamma(client, digits) -> None:
    first = landscape(client, digits, reducer="pca", n_components=3)
    again = landscape(client, digits, reducer="pca", n_components=3)
    other_gamma = landscape(client, digits, reducer="pca", n_components=3, gamma=1.5)
    assert first["cached"] == {"embedding": False, "lce": False}
    assert again["cached"] == {"embedding": True, "lce": True}
    assert other_gamma["cached"] == {"embedding": True, "lce": False}
    assert {k: v for k, v in again.items() if k != "cached"} == {
        k: v for k, v in first.items() if k != "cached"}
    assert other_gamma["params"]["gamma"] == 1.5 and other_gamma["mlce"] != first["mlce"]
    curve = wait_for_job(client, client.post(f"/api/v1/datasets/{digits}/lce/curve",
                                             json={"reducer": "pca", "n_components": 3}))
    assert not curve["cached"]
    assert wait_for_job(client, client.post(f"/api/v1/datasets/{digits}/lce/curve",
                                            json={"reducer": "pca", "n_components": 3}))["cached"]
    store = client.app.state.services.store
    assert len(list(store.root.glob(f"tables/{digits}.lce-embedding.*"))) == 1
    assert len(list(store.root.glob(f"tables/{digits}.lce.*"))) == 2
    assert client.delete(f"/api/v1/datasets/{digits}").status_code == 204
    assert not list(store.root.glob(f"**/{digits}.lce*"))


def test_lce_columns_are_saved_and_downloadable(client, digits, digits_frame) -> None:
    result = landscape(client, digits, reducer="pca", subset="test", gamma=0.2)
    test_rows = np.flatnonzero(digits_frame["split"].to_numpy() == "test")
    assert result["n_rows"] == test_rows.size == 624 and result["saved_columns"] == [
        "lce", "lce_signed"]
    labels, proba = arrays(digits_frame.iloc[test_rows])
    embedding = embed(digits_frame[PIXELS].iloc[test_rows], reducer="pca", random_state=0)
    expected = local_calibration(embedding.coordinates, labels, proba, gamma=0.2).signed_lce

    fitted = client.post(f"/api/v1/datasets/{digits}/recalibrations",
                         json={"method": "temperature"})
    assert fitted.status_code == 201, fitted.text
    response = client.get(f"/api/v1/recalibrations/{fitted.json()['id']}/download",
                          params={"columns": "lce,lce_signed"})
    assert response.status_code == 200, response.text
    frame = pd.read_csv(io.BytesIO(response.content))
    assert list(frame.columns[-2:]) == ["lce", "lce_signed"]
    np.testing.assert_allclose(frame["lce_signed"].to_numpy()[test_rows], expected, atol=1e-12)
    np.testing.assert_allclose(frame["lce"].to_numpy()[test_rows], np.abs(expected), atol=1e-12)
    assert frame["lce"].isna().sum() == 1197 - 624  # calibration rows: not computed


def test_embedding_columns_are_used_as_given(client, digits, digits_frame) -> None:
    result = landscape(client, digits, reducer="columns", embedding_columns=["px20", "px43"],
                       max_points="all")
    labels, proba = arrays(digits_frame)
    expected = local_calibration_error(digits_frame[["px20", "px43"]].to_numpy(), labels, proba,
                                       gamma=0.2)
    assert result["params"]["gamma"] == 0.2 and result["embedding"]["columns"] == ["px20",
                                                                                   "px43"]
    np.testing.assert_allclose(per_row(result, "lce", 1197), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(per_row(result, "x", 1197), digits_frame["px20"])


@pytest.mark.parametrize("body, code", [
    ({"gamma": -0.5}, "invalid_request"),
    ({"gamma": 0}, "invalid_request"),
    ({"reducer": "lda"}, "invalid_request"),
    ({"features": ["px1", "pixel_99"]}, "unknown_feature"),
    ({"reducer": "columns"}, "missing_embedding_columns"),
    ({"reducer": "columns", "embedding_columns": ["nope"]}, "unknown_feature"),
    ({"reducer": "pca", "embedding_columns": ["px1"]}, "invalid_parameters"),
    ({"reducer": "umap", "n_components": 5}, "invalid_parameters"),
    ({"n_bins": 0}, "invalid_request"),
    ({"bin": 15}, "invalid_parameters"),
    ({"max_points": 0}, "invalid_request"),
    ({"sample_size": 3}, "invalid_request"),
    ({"gamma": 0.2, "bogus": 1}, "invalid_request"),
])
@pytest.mark.slow
def test_bad_parameters_are_4xx(client, digits, body, code) -> None:
    """A bad parameter is a 422; a feature this dataset lacks, a 409 (the same request
    suits a dataset that has it)."""
    status = 409 if code == "unknown_feature" else 422
    error = assert_error(client.post(f"/api/v1/datasets/{digits}/lce", json=body), status, code)
    if code == "unknown_feature":
        assert "px0" in error["message"]  # names what the dataset has


def test_bad_curve_parameters_and_unknown_dataset(client, digits) -> None:
    url = f"/api/v1/datasets/{digits}/lce/curve"
    assert_error(client.post(url, json={"gammas": [0.1, -1]}), 422, "invalid_request")
    assert_error(client.post(url, json={"gamma_min": 1, "gamma_max": 0.1}), 422,
                 "invalid_parameters")
    assert_error(client.post(url, json={"reducer": "columns"}), 422, "missing_embedding_columns")
    assert_error(client.post("/api/v1/datasets/ds_missing/lce", json={}), 404, "not_found")
    assert_error(client.post("/api/v1/datasets/ds_missing/lce/curve", json={}), 404,
                 "not_found")


def test_a_dataset_without_features_is_told_why(client, digits_frame) -> None:
    frame = digits_frame[["label", *PROBA]]
    dataset = upload(client, frame.to_csv(index=False).encode()).json()["id"]
    error = assert_error(client.post(f"/api/v1/datasets/{dataset}/lce", json={}), 409,
                         "no_features")
    assert "feature" in error["message"]


@pytest.mark.slow
def test_umap_on_a_sample_equals_the_core(client, digits, digits_frame, monkeypatch) -> None:
    # As in a freshly started server: UMAP not compiled yet. The warm-up compiles only the
    # exact-neighbour path this request uses (the server's also compiles the approximate
    # one used from 4,096 rows on, a minute more on 2 cores).
    monkeypatch.setattr(local_embedding, "_UMAP", local_embedding._WarmUp())
    monkeypatch.setattr(local_embedding, "warm_up", lambda reducer, random_state, progress: embed(
        np.random.default_rng(random_state).normal(size=(300, 4)), reducer=reducer,
        progress=progress))
    assert client.get("/api/v1/health").json()["umap"] == "not compiled"
    assert local.start_warm_up(client.app.state.services) is not None
    assert local.start_warm_up(client.app.state.services) is None  # once per process
    response = client.post(f"/api/v1/datasets/{digits}/lce",
                           json={"reducer": "umap", "sample_size": 400, "max_points": "all"})
    messages = set()
    job_id = response.json()["job_id"]
    while (job := client.get(f"/api/v1/jobs/{job_id}").json())["status"] in ("queued",
                                                                             "running"):
        messages.add(job["message"])
        time.sleep(0.05)
    assert job["status"] == "succeeded", job
    # the request waits for the warm-up, saying its stage and how far it is
    assert any(m.startswith(local.PREPARING_UMAP) for m in messages), messages
    assert client.get("/api/v1/health").json()["umap"] == "ready"
    result = job["result"]
    labels, proba = arrays(digits_frame)
    embedding = embed(digits_frame[PIXELS], reducer="umap", sample_size=400, random_state=0)
    assert result["embedding"]["fitted_rows"] == 400 and result["embedding"]["placement"] in (
        "transform", "graph")
    assert any("seeded sample of 400 of 1,197 rows" in n for n in result["notes"])
    np.testing.assert_allclose(per_row(result, "lce", 1197), local_calibration_error(
        embedding.coordinates, labels, proba, gamma=0.2), rtol=0, atol=1e-9)


def test_a_warm_up_that_never_ran_does_not_hold_umap_requests(monkeypatch) -> None:
    state = local_embedding._WarmUp(job=Job(id="job_x", kind="umap_warm_up", status="cancelled"))
    monkeypatch.setattr(local_embedding, "_UMAP", state)
    waiting = threading.Thread(target=local_embedding._wait_for_umap, args=(Progress(), 0.0))
    waiting.start()
    waiting.join(timeout=5)
    assert not waiting.is_alive()
    state.job = Job(id="job_y", kind="umap_warm_up", status="running")
    waiting = threading.Thread(target=local_embedding._wait_for_umap, args=(Progress(), 0.0))
    waiting.start()
    waiting.join(timeout=1)
    assert waiting.is_alive()  # still compiling: it waits
    state.ready.set()
    waiting.join(timeout=5)
    assert not waiting.is_alive()


def test_an_unlabeled_batch_is_refused_with_a_reason(client, digits_frame) -> None:
    frame = digits_frame.drop(columns=["label"])
    response = upload(client, frame.to_csv(index=False).encode(), "batch.csv", unlabeled="true")
    assert response.status_code == 201, response.text
    assert_error(client.post(f"/api/v1/datasets/{response.json()['id']}/lce", json={}), 422,
                 "no_labels")
