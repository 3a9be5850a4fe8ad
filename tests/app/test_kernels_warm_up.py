"""After the start-up warm-up, no job compiles a kernel midway.

A numba compilation cannot be interrupted and reports no progress: a job reaching a
kernel that is not compiled yet in its process stands still and ignores a cancel until
it is done (8 s for the local forests at the first start after an installation). The
warm-up job (:mod:`app.services.warm_up`) compiles or loads every kernel; this runs the
jobs and pages that use them afterwards, with numba's ``compile`` (through which a
dispatcher also loads a cached kernel) recording every call.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from numba.core.dispatcher import Dispatcher

from app.services.warm_up import start_kernel_warm_up
from tests.app.test_api import upload
from tests.app.test_cancel_latency import synthetic_binary
from tests.app.test_job_errors import finished


def succeeded(client, job_id: str) -> dict:  # type: ignore[no-untyped-def]
    job = finished(client, job_id, seconds=300)
    assert job["status"] == "succeeded", job
    return job


@pytest.mark.slow
def test_after_the_warm_up_no_job_compiles_a_kernel(client, monkeypatch) -> None:
    warm = start_kernel_warm_up(client.app.state.services)
    assert warm.estimate is not None and warm.estimate["low"] < 2 < 25 < warm.estimate["high"]
    assert succeeded(client, warm.id)["result"] == {"status": "compiled"}
    compiled: list[str] = []
    original = Dispatcher.compile

    def recorded(self, signature):  # type: ignore[no-untyped-def]
        compiled.append(f"{self.py_func.__module__}.{self.py_func.__qualname__}")
        return original(self, signature)

    monkeypatch.setattr(Dispatcher, "compile", recorded)
    # 1,500 rows: the LOESS curves take their window-moment path (above 1,000 rows)
    dataset = upload(client, synthetic_binary(1_500, holes=True)).json()["id"]
    base = f"/api/v1/datasets/{dataset}"
    assert client.get(f"{base}/metrics", params={"n_bootstrap": 20}).status_code == 200
    assert client.get(f"{base}/clinical").status_code == 200
    assert client.get(f"{base}/variables/x0").status_code == 200
    jobs = [
        client.post(f"{base}/heterogeneity", json={"sample": 40}),
        client.post(f"{base}/support", json={"n_folds": 2}),
        client.get(f"{base}/variables", params={"async": "true", "n_permutations": 20}),
        client.post(f"{base}/recalibrations", json={
            "methods": ["isotonic", "venn_abers", "swc", "swc_hh"], "async": True}),
        client.post(f"{base}/lce", json={"reducer": "pca"}),
    ]
    for response in jobs:
        assert response.status_code == 202, response.text
        succeeded(client, response.json()["job_id"])
    # LECE's sorted searches, without and with row weights (a weight column)
    frame = pd.read_csv(io.BytesIO(synthetic_binary(1_500, seed=1)))
    frame["weight"] = np.random.default_rng(2).uniform(0.5, 2.0, len(frame)).round(2)
    weighted = upload(client, frame.to_csv(index=False).encode()).json()["id"]
    for data in (dataset, weighted):
        response = client.post(f"/api/v1/datasets/{data}/recalibrations",
                               json={"methods": ["lece"], "async": True})
        assert response.status_code == 202, response.text
        succeeded(client, response.json()["job_id"])
    assert compiled == []
