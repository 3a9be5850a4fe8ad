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


#: Methods of an OpenAPI path item (its other keys are parameters, a summary, ...).
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _labels(document: dict[str, Any]) -> list[tuple[str, set[str]]]:
    """Each operation's label (as schemathesis spells it, "GET /api/v1/health") and the
    names of its path parameters, read from the document itself: collecting the tests
    needs no parsed schema, no second app and no resources (each test process collects
    this module, and only one runs it)."""
    operations = []
    for path, item in document["paths"].items():
        shared = [p for p in item.get("parameters", []) if p.get("in") == "path"]
        for method, operation in item.items():  # in the document's order, as schemathesis
            if method in _METHODS:
                own = [p for p in operation.get("parameters", []) if p.get("in") == "path"]
                operations.append((f"{method.upper()} {path}",
                                   {p["name"] for p in shared + own}))
    return operations


#: The operations, from the document of an app with the test settings (the token only
#: adds security requirements, not operations: checked by a test below).
OPERATIONS = _labels(_app().openapi())
ID_KINDS = ("dataset_id", "recalibration_id", "model_id", "upload_id", "job_id")


class _Apps:
    """The two apps (no token, a token), their schemathesis operations by label and the
    real resources of the open one, made on first use by the tests that run here."""

    def __init__(self) -> None:
        self.open = _app()
        self.guarded = _app(api_token=TOKEN)
        self.client = TestClient(self.open)  # no lifespan: its end would shut the job runner down
        self.open_operations = _operations(self.open)
        self.guarded_operations = _operations(self.guarded)
        self.dataset = self.new("dataset_id")
        self.recalibration = self.new("recalibration_id")
        self.real_ids = {kind: self.dataset if kind == "dataset_id" else self.recalibration
                         if kind == "recalibration_id" else self.new(kind)
                         for kind in ID_KINDS}

    def new(self, kind: str) -> str:
        """A fresh resource of ``kind`` (its id), for an operation that may delete it.

        Schemathesis runs the app's lifespan around each checked call, and its end stops
        the job runner and marks the services stopping (uploads refuse) until the next
        call starts them; made between calls, a resource starts them itself, as a lifespan
        would.
        """
        services = self.open.state.services
        services.stopping.clear()
        services.jobs.start()
        client = self.client
        if kind == "dataset_id":
            return str(client.post("/api/v1/datasets",
                                   files={"file": ("small.csv", _small_csv())}).json()["id"])
        if kind == "recalibration_id":
            return str(client.post(f"/api/v1/datasets/{self.dataset}/recalibrations",
                                   json={"method": "platt"}).json()["id"])
        if kind == "model_id":
            document = client.get(f"/api/v1/recalibrations/{self.recalibration}/model").content
            return str(client.post("/api/v1/models", content=document,
                                   headers={"content-type": "application/json"}).json()["id"])
        if kind == "upload_id":
            return str(client.post("/api/v1/uploads", files={
                "file": ("small.csv", _small_csv())}).json()["upload_id"])
        if kind == "job_id":
            return str(client.post(f"/api/v1/datasets/{self.dataset}/recalibrations",
                                   json={"method": "platt", "async": True}).json()["job_id"])
        raise KeyError(kind)


def _operations(app: Any) -> dict[str, Any]:
    # from_asgi would fetch /openapi.json inside the app's lifespan, whose end stops the
    # job runner; the document is the same as app.openapi()
    schema = schemathesis.openapi.from_dict(app.openapi())
    schema.app = app
    return {operation.label: operation
            for operation in (result.ok() for result in schema.get_all_operations())}


@pytest.fixture(scope="module")
def apps() -> _Apps:
    return _Apps()


@pytest.fixture(scope="module")
def sessions(apps: _Apps) -> Any:
    """One in-process client per app for the whole module: its lifespan runs once (without
    a session schemathesis starts and stops the app, and so its job runner, per request)."""
    with asgi.get_client(apps.open) as open_client, \
            asgi.get_client(apps.guarded) as guarded_client:
        yield {"open": open_client, "guarded": guarded_client}


def _run(apps: _Apps, operation: Any, check: Any, substitute: bool) -> None:
    deletes = operation.method.upper() == "DELETE"

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def run(case: Any) -> None:
        if substitute and case.path_parameters:
            for name in case.path_parameters:
                if name in apps.real_ids:
                    case.path_parameters[name] = (apps.new(name) if deletes
                                                  else apps.real_ids[name])
        check(case)

    run()


CASES = [pytest.param(label, substitute, id=f"{label}-{kind}")
         for label, names in OPERATIONS
         for substitute, kind in ((False, "made-up ids"), (True, "real ids"))
         if not substitute or names & set(ID_KINDS)]
LABELS = [label for label, _ in OPERATIONS]


@pytest.mark.slow
@pytest.mark.parametrize(("label", "substitute"), CASES)
def test_no_request_gets_a_server_error(label, substitute, apps, sessions) -> None:
    _run(apps, apps.open_operations[label],
         lambda case: case.call_and_validate(session=sessions["open"],
                                             checks=[not_a_server_error], timeout=TIMEOUT),
         substitute)


@pytest.mark.slow
@pytest.mark.parametrize("label", LABELS, ids=LABELS)
def test_with_the_token_no_request_gets_a_server_error(label, apps, sessions) -> None:
    """The same with a token set and given: the checks run behind the token too."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    _run(apps, apps.guarded_operations[label], lambda case: case.call_and_validate(
        session=sessions["guarded"], headers=headers, checks=[not_a_server_error]), False)


@pytest.mark.slow
def test_the_tests_are_collected_for_every_operation_of_both_apps(apps) -> None:
    """The labels read from the document at collection are schemathesis's operations of
    either app, path parameters included: no operation goes unchecked."""
    for operations in (apps.open_operations, apps.guarded_operations):
        assert [(operation.label, {parameter.name for parameter in operation.path_parameters})
                for operation in operations.values()] == OPERATIONS


def test_every_operation_with_an_id_runs_with_a_real_one(apps) -> None:
    """Every path id the API takes has a real resource to substitute."""
    names = {parameter.name for operation in apps.open_operations.values()
             for parameter in operation.path_parameters}
    assert names - {"name"} <= set(apps.real_ids)  # a variable's name is a string of its own


@pytest.mark.slow
@pytest.mark.parametrize("label", LABELS, ids=LABELS)
def test_with_a_token_nothing_answers_without_it(label, apps, sessions) -> None:
    def check(case: Any) -> None:
        response = case.call(session=sessions["guarded"])  # no Authorization header
        public = case.path == "/api/v1/health"
        assert response.status_code == (200 if public else 401), (case.path, response.text)

    _run(apps, apps.guarded_operations[label], check, substitute=False)


@pytest.mark.slow
@pytest.mark.parametrize("token", [False, True], ids=["no token", "token"])
def test_stateful_sequences_never_get_a_server_error(token: bool, apps) -> None:
    """Schemathesis's stateful phase: sequences of calls that follow the links it infers
    from the document (create a dataset, read it, recalibrate it, download, delete, ...),
    each response's ids fed to the next call; no step answers 5xx."""
    app = apps.guarded if token else apps.open
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
