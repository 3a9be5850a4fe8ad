"""Every heavy job stops within 2 s of a cancel, wherever in its work the cancel lands.

Each case is a job that runs for well over 5 s uncancelled (the measured durations are
in the comments); the test waits until it is inside its long loop, cancels it through
the REST API and times how long it takes to report ``cancelled``.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.app.test_api import upload

LIMIT_SECONDS = 2.0


def synthetic_binary(n_rows: int = 40_000, seed: int = 0, *, holes: bool = False) -> bytes:
    """A binary prediction file with four numeric features and a split column; with
    ``holes``, each feature misses a different 1% of rows."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_rows, 4))
    logit = features @ np.array([1.5, -1.0, 0.5, 0.0])
    y_true = (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(int)
    y_prob = 1 / (1 + np.exp(-1.6 * logit + 0.3))
    if holes:
        features[rng.random(features.shape) < 0.01] = np.nan
    frame = pd.DataFrame({"y_true": y_true, "y_prob": y_prob.round(6),
                          **{f"x{j}": features[:, j] for j in range(4)},
                          "split": np.where(rng.random(n_rows) < 0.5, "calibration", "test")})
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def synthetic_multiclass(n_rows: int = 40_000, n_classes: int = 4, seed: int = 0) -> bytes:
    """A K-class prediction file (softmax of noisy logits) with a split column."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n_rows, n_classes)) * 2.0
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    labels = (rng.random(n_rows)[:, None] < np.cumsum(proba, axis=1)).argmax(axis=1)
    frame = pd.DataFrame(proba.round(6), columns=[f"proba_{k}" for k in range(n_classes)])
    frame[f"proba_{n_classes - 1}"] = 1.0 - frame.iloc[:, :-1].sum(axis=1)
    frame.insert(0, "y_true", labels)
    frame["split"] = np.where(rng.random(n_rows) < 0.5, "calibration", "test")
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return buffer.getvalue().encode()


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels() -> None:
    """What the server's start-up warm-up does (:mod:`app.services.warm_up`): a kernel's
    first compilation in a process cannot be cancelled (8 s for the local forests on a
    fresh installation), so these tests time the cancel of a job's own loops."""
    from calibcore.kernels import compile_kernels

    compile_kernels()


@pytest.fixture(scope="module")
def big_binary() -> bytes:
    return synthetic_binary()


def job_of(response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 202, response.text
    return str(response.json()["job_id"])


def cancel_latency(client, job_id: str, inside: Callable[[dict[str, Any]], bool],  # type: ignore[no-untyped-def]
                   *, settle: float = 0.5, seconds: float = 300) -> tuple[float, dict[str, Any]]:
    """Wait until the job is ``inside`` its long loop (and ``settle`` s more), cancel it
    and return the seconds until it ended, with its last snapshot."""
    deadline = time.monotonic() + seconds
    while True:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        assert job["status"] in ("queued", "running"), f"ended before the cancel: {job}"
        if job["status"] == "running" and job["progress"] > 0 and inside(job):
            break
        assert time.monotonic() < deadline, f"never got inside the long loop: {job}"
        time.sleep(0.05)
    time.sleep(settle)
    assert client.get(f"/api/v1/jobs/{job_id}").json()["status"] == "running"
    started = time.monotonic()
    assert client.delete(f"/api/v1/jobs/{job_id}").status_code == 200
    while (job := client.get(f"/api/v1/jobs/{job_id}").json())["status"] == "running":
        assert time.monotonic() - started < 60, "the job ignores the cancel"
        time.sleep(0.02)
    return time.monotonic() - started, job


def assert_stopped_promptly(latency: float, job: dict[str, Any]) -> None:
    assert job["status"] == "cancelled", job
    assert job["result"] is None
    assert latency < LIMIT_SECONDS, f"cancel took {latency:.2f} s ({job['message']})"


@pytest.mark.slow
def test_hidden_heterogeneity_stops_within_2_s(client, shared_data) -> None:
    # HH of all 3,474 test rows of default_nb: 850 local forests, 30 s to minutes.
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/heterogeneity",
                                json={"sample": "all"}))
    latency, job = cancel_latency(client, job_id, lambda j: "local forests" in j["message"])
    assert_stopped_promptly(latency, job)


def test_hh_neighbourhood_search_stops_within_2_s(client, shared_data) -> None:
    # Grouping 8 million (row, neighbour) pairs into distinct neighbourhoods: 5-10 s.
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/heterogeneity",
                                json={"sample": "all", "random_state": 1}))
    latency, job = cancel_latency(client, job_id, lambda j: "neighbourhoods of" in j["message"],
                                  settle=0.1)
    assert_stopped_promptly(latency, job)


def test_lece_cross_validation_stops_within_2_s(client) -> None:
    # LECE choosing q and t by 10-fold CV on 20,000 calibration rows of 4 classes: about
    # a minute (binary rows take the sorted search, well under a second).
    dataset = upload(client, synthetic_multiclass()).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                                json={"method": "lece", "async": True}))
    latency, job = cancel_latency(client, job_id, lambda j: "fitting" in j["message"])
    assert_stopped_promptly(latency, job)


@pytest.mark.slow
def test_swc_forest_stops_within_2_s(client, big_binary) -> None:
    # SWC's 100-tree proximity forest on 20,000 rows: 25-45 s in one scikit-learn call,
    # now grown tree by tree.
    dataset = upload(client, big_binary).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                                json={"method": "swc", "async": True}))
    latency, job = cancel_latency(client, job_id, lambda j: "fitting" in j["message"])
    assert_stopped_promptly(latency, job)


def test_swc_hh_stops_within_2_s(client, shared_data) -> None:
    # SWC-HH on default_nb: HH of 7,000 rows against 3,526 calibration rows, minutes.
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                                json={"method": "swc_hh", "async": True}))
    latency, job = cancel_latency(client, job_id,
                                  lambda j: "hidden heterogeneity" in j["message"])
    assert_stopped_promptly(latency, job)
    assert client.get(f"/api/v1/datasets/{dataset}/recalibrations").json() == []


@pytest.mark.slow
def test_variable_ranking_stops_within_2_s(client) -> None:
    # 10,000 permutations of each of 4 variables on 40,000 rows (different missing rows,
    # so no two share a permutation null): about 5 s per variable (slow tier: the first
    # variable has to finish before the job shows any progress).
    dataset = upload(client, synthetic_binary(holes=True)).json()["id"]
    job_id = job_of(client.get(f"/api/v1/datasets/{dataset}/variables",
                               params={"async": "true", "n_permutations": 10_000}))
    latency, job = cancel_latency(client, job_id, lambda j: True)
    assert_stopped_promptly(latency, job)


def test_support_stops_within_2_s(client, big_binary) -> None:
    # Calibration support: six proximity forests on 16,000-20,000 rows, minutes.
    dataset = upload(client, big_binary).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/support", json={}))
    latency, job = cancel_latency(client, job_id, lambda j: "forests" in j["message"])
    assert_stopped_promptly(latency, job)


@pytest.mark.slow
def test_recalibration_comparison_stops_within_2_s(client, big_binary) -> None:
    # After two quick fits, the held-out comparison with 2,000 bootstrap resamples of
    # 20,000 rows and MLCE: well over 5 s.
    dataset = upload(client, big_binary).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/recalibrations", json={
        "methods": ["temperature", "platt"], "n_bootstrap": 2000, "async": True}))
    latency, job = cancel_latency(client, job_id, lambda j: "comparing" in j["message"],
                                  settle=1.0)
    assert_stopped_promptly(latency, job)


@pytest.mark.slow
def test_umap_landscape_stops_within_2_s(client, shared_data) -> None:
    # UMAP fitted on 2,000 of default_nb's 7,000 rows: 500 layout epochs after the exact
    # neighbour graph and the spectral layout (2.7 s; 11 s for 4,000 rows), then the
    # transform's epochs for the other 5,000. Slow tier: the first UMAP in a process
    # compiles (or loads numba's cache).
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/lce",
                                json={"reducer": "umap", "sample_size": 2_000}))
    latency, job = cancel_latency(client, job_id, lambda j: "epoch" in j["message"],
                                  seconds=900)
    assert_stopped_promptly(latency, job)
