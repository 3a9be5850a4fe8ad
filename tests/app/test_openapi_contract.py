"""The OpenAPI document tells the truth: every JSON answer has a typed schema, every error
the envelope, one router per resource, the bearer scheme only when a token is set, and a
wrong method on a known path is a 405 listing the right ones."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import app.api
from app.api import RESOURCES
from app.config import Settings
from app.main import create_app
from tests.app.test_api import assert_error, upload

_ERROR = "#/components/schemas/ErrorResponse"
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _document(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    settings = Settings(data_dir=tmp_path / "store", load_example=False, warm_up=False,
                        **overrides)
    return create_app(settings).openapi()


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, operation) for path, item in schema["paths"].items()
            for method, operation in item.items() if method in _METHODS]


def _is_typed(media: dict[str, Any]) -> bool:
    """A named model, a list of one, or a choice between them: never ``{}`` or a bare
    object."""
    schema = media.get("schema") or {}
    if "$ref" in schema:
        return True
    if schema.get("type") == "array":
        return "$ref" in schema.get("items", {})
    choices = schema.get("anyOf") or schema.get("oneOf")
    return bool(choices) and all("$ref" in choice for choice in choices)


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _document(tmp_path_factory.mktemp("openapi"))


def test_every_json_success_has_a_typed_schema(document) -> None:
    untyped = []
    for path, method, operation in _operations(document):
        for status, response in operation["responses"].items():
            if not status.startswith("2"):
                continue
            content = response.get("content", {})
            if status != "204" and not content:
                untyped.append(f"{method.upper()} {path} {status}: no content")
            json = content.get("application/json")
            if json is not None and not _is_typed(json):
                untyped.append(f"{method.upper()} {path} {status}: {json.get('schema')}")
    assert not untyped, untyped


def test_every_error_answer_is_the_envelope(document) -> None:
    for path, method, operation in _operations(document):
        statuses = set(operation["responses"])
        assert {"400", "413"} <= statuses, (method, path)
        if method in ("post", "put", "patch", "delete"):
            assert "403" in statuses, (method, path)
        for status, response in operation["responses"].items():
            if status[0] in "45":
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": _ERROR}, (method, path, status)
                assert response["description"], (method, path, status)
    assert "HTTPValidationError" not in document["components"]["schemas"]


def test_every_constraint_is_a_json_schema_keyword(document) -> None:
    """pydantic writes a bound it cannot place as its own ``ge``/``le``, which no client
    reads: a request the schema seems to allow would be refused."""
    misplaced = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            misplaced.extend(f"{where}.{key}" for key in ("ge", "gt", "le", "lt") if key in node)
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}[{index}]")

    walk(document, "")
    assert not misplaced, misplaced


def test_jobs_answer_202_with_their_id(document) -> None:
    accepted = [(path, method) for path, method, operation in _operations(document)
                if "202" in operation["responses"]]
    assert len(accepted) == 8, accepted
    for path, method in accepted:
        schema = document["paths"][path][method]["responses"]["202"]["content"][
            "application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/JobAccepted"}, (method, path)
    assert "job_id" in document["components"]["schemas"]["JobAccepted"]["required"]


def test_one_router_per_resource(document) -> None:
    routes_dir = Path(app.api.__file__).parent / "routes"
    modules = {path.stem for path in routes_dir.glob("*.py") if path.stem != "__init__"}
    assert {module.__name__.rsplit(".", 1)[1] for module in RESOURCES} == modules
    tag_of = {}
    for module in RESOURCES:
        assert len(module.router.tags) == 1, module.__name__
        tag_of[module.__name__] = module.router.tags[0]
        for route in module.router.routes:
            assert route.endpoint.__module__ == module.__name__
            assert route.path.startswith(module.router.prefix)
    assert len(set(tag_of.values())) == len(RESOURCES), tag_of  # one module per tag
    documented = {operation["tags"][0] for _, _, operation in _operations(document)}
    assert documented == set(tag_of.values())
    for _, _, operation in _operations(document):
        assert len(operation["tags"]) == 1


def test_the_bearer_scheme_is_declared_only_with_a_token(tmp_path: Path, document) -> None:
    assert "securitySchemes" not in document["components"]
    for path, method, operation in _operations(document):
        assert "security" not in operation and "401" not in operation["responses"], path
        names = {parameter["name"].lower() for parameter in operation.get("parameters", [])}
        assert "authorization" not in names, (method, path)
    guarded = _document(tmp_path, api_token="s3cret")
    assert guarded["components"]["securitySchemes"] == {"HTTPBearer": {
        "type": "http", "scheme": "bearer", "description": "the server's CALIBDASH_API_TOKEN"}}
    for path, _, operation in _operations(guarded):
        public = path == "/api/v1/health"
        assert ("security" in operation) is not public, path
        assert ("401" in operation["responses"]) is not public, path


def test_a_wrong_method_on_a_known_path_is_a_405_listing_the_right_ones(client,
                                                                      document) -> None:
    for path, item in document["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        documented = {method.upper() for method in item if method in _METHODS}
        for method in ("OPTIONS", "TRACE", "PUT", "PATCH"):
            if method.lower() in item:
                continue
            response = client.request(method, concrete)
            assert_error(response, 405, "method_not_allowed")
            assert set(response.headers["allow"].split(", ")) == documented, (method, path)
    assert_error(client.delete("/api/v1/datasets"), 405)
    assert client.delete("/api/v1/datasets").headers["allow"] == "GET, POST"
    # a concrete path wins over a template, as in OpenAPI: /datasets/external is POST only
    assert client.put("/api/v1/datasets/external").headers["allow"] == "POST"
    assert_error(client.get("/api/v1/nothing/here"), 404, "not_found")
    assert_error(client.request("TRACE", "/api/v1/nothing"), 404, "not_found")


def test_typed_answers_add_no_field_the_service_did_not_give(client, shared_data) -> None:
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()
    assert "external" not in dataset and "n_columns" in dataset
    assert client.get(f"/api/v1/datasets/{dataset['id']}").json() == dataset
    metrics = client.get(f"/api/v1/datasets/{dataset['id']}/metrics",
                         params={"n_bootstrap": 0}).json()
    assert metrics["calibration_test"] is None
    assert not {"sample_note", "exact_note"} & set(metrics)


def test_request_bodies_are_held_to_their_schema(client, shared_data) -> None:
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    support = f"/api/v1/datasets/{dataset}/support"
    for body in ({"random_state": "5"}, {"random_state": True}, {"n_folds": 2.5},
                 {"alpha": "0.1"}, {"n_lowest": None}):
        assert_error(client.post(support, json=body), 422, "invalid_request")
    # JSON Schema counts 5.0 as an integer
    assert client.post(support, json={"random_state": 5.0, "n_folds": 3.0}).status_code == 202
    staged = client.post("/api/v1/uploads", files={
        "file": ("a.csv", (shared_data / "default_nb.csv").read_bytes())}).json()
    assert_error(client.post(f"/api/v1/uploads/{staged['upload_id']}/confirm",
                             json={"no_time": 0}), 422, "invalid_request")
    recalibrations = f"/api/v1/datasets/{dataset}/recalibrations"
    for body in ({}, {"method": None}, {"methods": []}, {"method": "platt", "features": []}):
        assert_error(client.post(recalibrations, json=body), 422, "invalid_request")
    assert_error(client.post(f"/api/v1/datasets/{dataset}/lce",
                             json={"embedding_columns": ["balance"]}), 422)
