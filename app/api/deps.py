"""FastAPI dependencies: the shared services and the optional API token."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request

from app.api.errors import ApiError
from app.services.context import Services


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def require_token(request: Request, services: ServicesDep) -> None:
    """When ``CALIBDASH_API_TOKEN`` is set, require it as a bearer token."""
    expected = services.settings.api_token
    if not expected:
        return
    header = request.headers.get("authorization", "")
    given = header[7:] if header.lower().startswith("bearer ") else request.cookies.get(
        "calibdash_token", "")
    if not secrets.compare_digest(given.encode(), expected.encode()):
        raise ApiError(401, "unauthorized",
                       "this server needs an API token: send 'Authorization: Bearer <token>'.")
