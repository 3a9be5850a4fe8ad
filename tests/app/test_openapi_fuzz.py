"""Schemathesis over the OpenAPI document: no generated request ever gets a 5xx.

Each operation is run with ids made up by Hypothesis (404s) and, when it takes one, with
real ids substituted (a small dataset, a recalibration, a saved model, a staged upload, a
job), so the parameter handling of the real computations is exercised too. A deletion
gets a resource of its own, made for each generated request, so the shared ones stay.
With a token set, no operation answers without it. The stores live in temporary folders
removed when the test process ends.
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


#: The stores' folders, removed (with everything in them) when the process ends.
_FOLDERS: list[tempfile.TemporaryDirectory[str]] = []


def _app(**overrides: Any) -> Any:
    folder = tempfile.TemporaryDirectory(prefix="calibdash-fuzz-")
    _FOLDERS.append(folder)
    return create_app(Settings(data_dir=Path(folder.name), load_example=False,
                               warm_up=False, allowed_hosts="*", n_bootstrap=20,
                               **overrides))


OPEN = _app()
GUARDED = _app(api_token=TOKEN)
_client = TestClient(OPEN)  # no lifespan: its end would shut the job runner down


def _new(kind: str) -> str:
    """A fresh resource of ``kind`` (its id), for an operation that may delete it.

    Schemathesis runs the app's lifespan around each checked call, and its end stops the
    job runner and marks the services stopping (uploads refuse) until the next call
    starts them; made between calls, a resource starts them itself, as a lifespan would.
    """
    services = OPEN.state.services
    services.stopping.clear()
    services.jobs.start()
    if kind == "dataset_id":
        return str(_client.post("/api/v1/datasets",
                                files={"file": ("small.csv", _small_csv())}).json()["id"])
    if kind == "recalibration_id":
        return str(_client.post(f"/api/v1/datasets/{DATASET}/recalibrations",
                                json={"method": "platt"}).json()["id"])
    if kind == "model_id":
        document = _client.get(f"/api/v1/recalibrations/{RECALIBRATION}/model").content
        return str(_client.post("/api/v1/models", content=document,
                                headers={"content-type": "application/json"}).json()["id"])
    if kind == "upload_id":
        return str(_client.post("/api/v1/uploads",
                                files={"file": ("small.csv", _small_csv())}).json()["upload_id"])
    if kind == "job_id":
        return str(_client.post(f"/api/v1/datasets/{DATASET}/recalibrations",
                                json={"method": "platt", "async": True}).json()["job_id"])
    raise KeyError(kind)


DATASET = _new("dataset_id")
RECALIBRATION = _new("recalibration_id")
REAL_IDS = {kind: DATASET if kind == "dataset_id" else RECALIBRATION
            if kind == "recalibration_id" else _new(kind)
            for kind in ("dataset_id", "recalibration_id", "model_id", "upload_id", "job_id")}


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
    deletes = operation.method.upper() == "DELETE"

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        if substitute and case.path_parameters:
            for name in case.path_parameters:
                if name in REAL_IDS:
                    case.path_parameters[name] = _new(name) if deletes else REAL_IDS[name]
        check(case)

    run()


def _takes_real_ids(operation: Any) -> bool:
    return bool({parameter.name for parameter in operation.path_parameters} & set(REAL_IDS))


CASES = [pytest.param(operation, substitute, id=f"{operation.label}-{kind}")
         for operation in OPEN_OPERATIONS
         for substitute, kind in ((False, "made-up ids"), (True, "real ids"))
         if not substitute or _takes_real_ids(operation)]


@pytest.mark.slow
@pytest.mark.parametrize(("operation", "substitute"), CASES)
def test_no_request_gets_a_server_error(operation, substitute, sessions) -> None:
    _run(operation, lambda case: case.call_and_validate(session=sessions["open"],
                                                         checks=[not_a_server_error],
                                                         timeout=TIMEOUT),
         substitute)


@pytest.mark.slow
@pytest.mark.parametrize("operation", GUARDED_OPERATIONS,
                         ids=[o.label for o in GUARDED_OPERATIONS])
def test_with_the_token_no_request_gets_a_server_error(operation, sessions) -> None:
    """The same with a token set and given: the checks run behind the token too."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    _run(operation, lambda case: case.call_and_validate(
        session=sessions["guarded"], headers=headers, checks=[not_a_server_error]), False)


def test_every_operation_with_an_id_runs_with_a_real_one() -> None:
    """Every path id the API takes has a real resource to substitute."""
    names = {parameter.name for operation in OPEN_OPERATIONS
             for parameter in operation.path_parameters}
    assert names - {"name"} <= set(REAL_IDS)  # a variable's name is a string of its own


@pytest.mark.parametrize("operation", GUARDED_OPERATIONS,
                         ids=[o.label for o in GUARDED_OPERATIONS])
def test_with_a_token_nothing_answers_without_it(operation, sessions) -> None:
    def check(case: Any) -> None:
        response = case.call(session=sessions["guarded"])  # no Authorization header
        public = case.path == "/api/v1/health"
        assert response.status_code == (200 if public else 401), (case.path, response.text)

    _run(operation, check, substitute=False)


@pytest.mark.slow
@pytest.mark.parametrize("token", [False, True], ids=["no token", "token"])
def test_stateful_sequences_never_get_a_server_error(token: bool) -> None:
    """Schemathesis's stateful phase: sequences of calls that follow the links it infers
    from the document (create a dataset, read it, recalibrate it, download, delete, ...),
    each response's ids fed to the next call; no step answers 5xx."""
    app = GUARDED if token else OPEN
    headers = {"Authorization": f"Bearer {TOKEN}"} if token else {}
    schema = schemathesis.openapi.from_dict(app.openapi())
    schema.app = app
    machine = schema.as_state_machine()
    assert len(machine.bundles) > 0  # links were found: the phase is stateful

    class Sequences(machine):  # type: ignore[valid-type, misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": headers}

        def validate_response(self, response: Any, case: Any,
                              additional_checks: Any = None, **kwargs: Any) -> None:
            case.validate_response(response, checks=[not_a_server_error],
                                   transport_kwargs=kwargs or None)

    Sequences.run(settings=settings(max_examples=8, stateful_step_count=5, deadline=None,
                                    suppress_health_check=list(HealthCheck)))
