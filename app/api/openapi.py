"""The OpenAPI document, completed with what the gate in front of the routes answers.

:class:`app.security.SecurityMiddleware` answers before any route: 400 for a ``Host``
this server does not serve, 403 for a state-changing request from another site, 413 for
a body past the limits, and, when ``CALIBDASH_API_TOKEN`` is set, 401 without the token.
Each operation documents those answers (and an operation on a stored resource its 409,
the refusal of a request the resource cannot serve), and the bearer scheme is declared only when a
token is set: without one, no request needs an ``Authorization`` header.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from app.config import Settings
from app.security import PUBLIC_PATHS

#: The name of the security scheme (the Authorize button of /docs).
BEARER = "HTTPBearer"
_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
_GATE = {
    "400": "The `Host` header is not a name this server answers to "
           "(CALIBDASH_ALLOWED_HOSTS), or the body could not be parsed.",
    "413": "The body is larger than this server accepts (CALIBDASH_MAX_REQUEST_BYTES; "
           "CALIBDASH_MAX_UPLOAD_BYTES for a file).",
}
_CROSS_SITE = ("403", "The request comes from another site (its `Origin` or `Referer` is not "
                      "this server's): changes are only accepted from its own pages.")
_UNAUTHORIZED = ("401", "The API token is missing or wrong: send `Authorization: Bearer "
                        "<token>`.")
_UNSAFE_METHODS = frozenset({"post", "put", "patch", "delete"})
#: FastAPI's own shape of a validation error, which app.api.errors replaces by the
#: envelope.
_FASTAPI_VALIDATION = "#/components/schemas/HTTPValidationError"
#: Answered by an operation on a stored resource (its path names one) that the resource
#: cannot serve: :data:`app.api.errors.STATE_CODES`.
_CONFLICT = ("409", "The request is well-formed but the stored resource cannot answer it "
                    "(no time column, no second model, no such feature, too few rows in "
                    "the subset, a result not computed yet): `error.code` says which.")
_INVALID = ("The request does not match the operation's parameters (`invalid_request`; "
            "`error.details.problems` lists what).")


def install_openapi(app: FastAPI, settings: Settings) -> None:
    """Make ``app.openapi()`` (and /openapi.json) the completed document."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document_gate(build(), token=bool(settings.api_token))
        assert app.openapi_schema is not None  # set by build()
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def document_gate(schema: dict[str, Any], *, token: bool) -> None:
    """Add the gate's answers to every operation of ``schema``, and with ``token`` the
    bearer scheme to every operation that needs it (in place)."""
    for path, operations in schema.get("paths", {}).items():
        guarded = token and path not in PUBLIC_PATHS
        for method, operation in operations.items():
            answers = dict(_GATE)
            if method in _UNSAFE_METHODS:
                answers[_CROSS_SITE[0]] = _CROSS_SITE[1]
            if "{" in path:
                answers[_CONFLICT[0]] = _CONFLICT[1]
            if guarded:
                answers[_UNAUTHORIZED[0]] = _UNAUTHORIZED[1]
                operation["security"] = [{BEARER: []}]
            responses = operation.setdefault("responses", {})
            if _refers_to(responses.get("422"), _FASTAPI_VALIDATION):
                responses["422"] = {"description": _INVALID, "content": _ERROR}
            for status, description in answers.items():
                responses.setdefault(status, {"description": description, "content": _ERROR})
    for name in ("HTTPValidationError", "ValidationError"):
        schema.get("components", {}).get("schemas", {}).pop(name, None)
    if token:
        schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
        schemes[BEARER] = {"type": "http", "scheme": "bearer",
                           "description": "the server's CALIBDASH_API_TOKEN"}


def _refers_to(response: dict[str, Any] | None, reference: str) -> bool:
    content = (response or {}).get("content", {}).get("application/json", {})
    return bool(content.get("schema", {}).get("$ref") == reference)
