"""The REST API under /api/v1: one router per resource."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.security import HTTPBearer

from app.api.errors import ApiError
from app.api.routes import (
    compare,
    datasets,
    heterogeneity,
    jobs,
    local,
    meta,
    metrics,
    models,
    recalibrations,
    subgroups,
    support,
    timeline,
    uploads,
    variables,
)

API_PREFIX = "/api/v1"
#: The routers, in the order the OpenAPI document lists their resources.
RESOURCES = (meta, datasets, uploads, metrics, variables, local, heterogeneity, support,
             compare, subgroups, timeline, recalibrations, models, jobs)


def build_router() -> APIRouter:
    """All REST routes (the token, when set, is checked by app.security first)."""
    # Declares the bearer scheme in the OpenAPI document (the Authorize button of /docs);
    # enforcement is app.security's, before the body is read.
    bearer = HTTPBearer(auto_error=False, description="CALIBDASH_API_TOKEN, when it is set")
    router = APIRouter(prefix=API_PREFIX, dependencies=[Depends(bearer)])
    for module in RESOURCES:
        router.include_router(module.router)

    @router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                      include_in_schema=False)
    def unknown(path: str) -> None:
        raise ApiError(404, "not_found", f"no API route {API_PREFIX}/{path}; see /docs.")

    return router
