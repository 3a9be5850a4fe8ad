"""Schemathesis over the OpenAPI document: no generated request ever gets a 5xx.

Each operation is run with ids made up by Hypothesis (404s) and with the ids of a real
small dataset and recalibration substituted, so the parameter handling of the real
computations is exercised too. With a token set, no operation answers without it.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi

from app.config import Settings
from app.main import create_app

TOKEN = "fuzz-token"
EXAMPLES = 12
#: Seconds a request may take: the schema names the registered methods, so generated
#: requests fit real ones (a 2,000-resample comparison takes seconds on a busy machine);
#: this test is about server errors, not speed.
TIMEOUT = 120


def _small_csv() -> bytes:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    p = 1 / (1 + np.exp(-(x[:, 0] - 0.5 * x[:, 1])))
    frame = pd.DataFrame({"y_true": (rng.uniform(size=300) < p).astype(int), "y_prob": p,
                          "x1": x[:, 0], "x2": x[:, 1],
                          "split": np.where(np.arange(300) % 2, "test", "calibration")})
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def _app(**overrides: Any) -> Any:
    return create_app(Settings(data_dir=Path(tempfile.mkdtemp(prefix="calibdash-fuzz-")),
                               load_example=False, warm_up=False, allowed_hosts="*",
                               n_bootstrap=20, **overrides))


OPEN = _app()
GUARDED = _app(api_token=TOKEN)
_client = TestClient(OPEN)  # no lifespan: its end would shut the job runner down
DATASET = _client.post("/api/v1/datasets",
                       files={"file": ("small.csv", _small_csv())}).json()["id"]
RECALIBRATION = _client.post(f"/api/v1/datasets/{DATASET}/recalibrations",
                             json={"method": "platt"}).json()["id"]
REAL_IDS = {"dataset_id": DATASET, "recalibration_id": RECALIBRATION}


def _operations(app: Any) -> list[Any]:
    # from_asgi would fetch /openapi.json inside the app's lifespan, whose end stops the
    # job runner; the document is the same as app.openapi()
    schema = schemathesis.openapi.from_dict(app.openapi())
    schema.app = app
    return [result.ok() for result in schema.get_all_operations()]


OPEN_OPERATIONS = _operations(OPEN)
GUARDED_OPERATIONS = _operations(GUARDED)


@pytest.fixture(scope="module")
def sessions() -> Any:
    """One in-process client per app for the whole module: its lifespan runs once (without
    a session schemathesis starts and stops the app, and so its job runner, per request)."""
    with asgi.get_client(OPEN) as open_client, asgi.get_client(GUARDED) as guarded_client:
        yield {"open": open_client, "guarded": guarded_client}


def _run(operation: Any, check: Any, substitute: bool) -> None:
    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        if substitute and case.path_parameters:
            for name in case.path_parameters:
                if name in REAL_IDS:
                    case.path_parameters[name] = REAL_IDS[name]
        check(case)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("substitute", [False, True], ids=["made-up ids", "real ids"])
@pytest.mark.parametrize("operation", OPEN_OPERATIONS, ids=[o.label for o in OPEN_OPERATIONS])
def test_no_request_gets_a_server_error(operation, substitute, sessions) -> None:
    names = {parameter.name for parameter in operation.path_parameters}
    if substitute and (not set(REAL_IDS) & names or operation.method.upper() == "DELETE"):
        pytest.skip("no id to substitute (or it would delete the shared dataset)")
    _run(operation, lambda case: case.call_and_validate(session=sessions["open"],
                                                         checks=[not_a_server_error],
                                                         timeout=TIMEOUT),
         substitute)


@pytest.mark.parametrize("operation", GUARDED_OPERATIONS,
                         ids=[o.label for o in GUARDED_OPERATIONS])
def test_with_a_token_nothing_answers_without_it(operation, sessions) -> None:
    def check(case: Any) -> None:
        response = case.call(session=sessions["guarded"])  # no Authorization header
        public = case.path == "/api/v1/health"
        assert response.status_code == (200 if public else 401), (case.path, response.text)

    _run(operation, check, substitute=False)
