"""The REST API under /api/v1."""

from __future__ import annotations

import importlib

from fastapi import APIRouter, Depends
from fastapi.security import HTTPBearer

from app.api.errors import ApiError
from app.diagnostics import router_modules


def build_router() -> APIRouter:
    """All REST routes (the token, when set, is checked by app.security first)."""
    # Declares the bearer scheme in the OpenAPI document (the Authorize button of /docs);
    # enforcement is app.security's, before the body is read.
    bearer = HTTPBearer(auto_error=False, description="CALIBDASH_API_TOKEN, when it is set")
    router = APIRouter(prefix="/api/v1", dependencies=[Depends(bearer)])
    for name in router_modules():  # each diagnostic's routers, from the registry
        router.include_router(importlib.import_module(f"app.api.routes.{name}").router)

    @router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                      include_in_schema=False)
    def unknown(path: str) -> None:
        raise ApiError(404, "not_found", f"no API route /api/v1/{path}; see /docs.")

    return router
