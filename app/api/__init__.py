"""The REST API under /api/v1: one router per resource."""

from __future__ import annotations

import functools
import importlib

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute

from app.api.errors import ApiError
from app.diagnostics import router_modules

API_PREFIX = "/api/v1"
#: The routers, each diagnostic's from the registry (app/diagnostics.py), in its order.
RESOURCES = tuple(importlib.import_module(f"app.api.routes.{name}")
                  for name in router_modules())
#: Every method the catch-all answers, so that no request under /api/v1 reaches the UI.
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


@functools.cache
def build_router() -> APIRouter:
    """All REST routes (the token, when set, is checked by app.security first), and a
    catch-all answering 405 with ``Allow`` for a wrong method on a known path, 404 on an
    unknown one, in the API's error shape.

    Built once per process: the routes hold nothing of an application (they read its
    services from ``request.app.state``), and FastAPI analyses a router's routes (their
    parameters and response models) once per router object, so every further
    application (tests build hundreds) includes it at no cost: 0.11 -> 0.07 s an app.
    """
    router = APIRouter(prefix=API_PREFIX)
    for module in RESOURCES:
        router.include_router(module.router)
    routes = [route for module in RESOURCES for route in module.router.routes
              if isinstance(route, APIRoute)]

    @router.api_route("/{path:path}", methods=list(_METHODS), include_in_schema=False)
    def unknown(request: Request, path: str) -> None:
        allowed = allowed_methods(routes, f"/{path}")
        if allowed:
            raise ApiError(405, "method_not_allowed",
                           f"{API_PREFIX}/{path} answers {', '.join(allowed)}, not "
                           f"{request.method}; see /docs.", headers={"Allow": ", ".join(allowed)})
        raise ApiError(404, "not_found", f"no API route {API_PREFIX}/{path}; see /docs.")

    return router


def allowed_methods(routes: list[APIRoute], path: str) -> list[str]:
    """The methods of ``path``, in a fixed order: those of the routes whose template
    matches it with the fewest parameters (as OpenAPI matches a path: ``/datasets/external``
    before ``/datasets/{dataset_id}``)."""
    matching = [route for route in routes if route.path_regex.match(path)]
    if not matching:
        return []
    fewest = min(len(route.param_convertors) for route in matching)
    methods = {method for route in matching if len(route.param_convertors) == fewest
               for method in route.methods or ()}
    return [method for method in _METHODS if method in methods]
