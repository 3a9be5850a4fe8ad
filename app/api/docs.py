"""The API's documentation pages, served with their scripts and styles from this server.

FastAPI's default ``/docs`` and ``/redoc`` load Swagger UI and ReDoc from a public CDN,
so on a machine without internet access (or behind a proxy that blocks the CDN) they
stay blank. Here they load the copies shipped in the ``fastapi-offline`` package,
mounted under :data:`DOCS_ASSETS_URL`, as FastAPI's guide on self-hosting the docs'
JavaScript and CSS describes. That package is used for its files only; the pages are
FastAPI's own (``get_swagger_ui_html``, ``get_redoc_html``).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_URL = "/docs"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"
REDOC_URL = "/redoc"
#: Where Swagger UI's and ReDoc's scripts, styles and icon are served.
DOCS_ASSETS_URL = "/docs/assets"
#: Swagger UI 5 (it reads OpenAPI 3.1, which FastAPI writes; Swagger UI 4 cannot) and
#: ReDoc 2, as the package ships them.
_ASSETS_DIR = Path(str(files("fastapi_offline") / "static"))


def install_docs(app: FastAPI) -> None:
    """Serve ``/docs`` (Swagger UI), its OAuth2 redirect and ``/redoc`` from local assets.

    ``app`` must be built with ``docs_url=None`` and ``redoc_url=None``, so that FastAPI
    does not register its CDN-based pages at the same paths.
    """
    openapi_url = app.openapi_url or "/openapi.json"
    app.mount(DOCS_ASSETS_URL, StaticFiles(directory=_ASSETS_DIR), name="docs-assets")

    @app.get(DOCS_URL, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = _root_path(request)
        return get_swagger_ui_html(
            openapi_url=root + openapi_url, title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=root + OAUTH2_REDIRECT_URL,
            swagger_js_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS_URL}/favicon.png",
            init_oauth=app.swagger_ui_init_oauth,
            swagger_ui_parameters=app.swagger_ui_parameters)

    @app.get(OAUTH2_REDIRECT_URL, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC_URL, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = _root_path(request)
        return get_redoc_html(
            openapi_url=root + openapi_url, title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_ASSETS_URL}/favicon.png",
            with_google_fonts=False)  # fonts from Google would be a third party again


def _root_path(request: Request) -> str:
    """The prefix a reverse proxy serves the application under ("" when none)."""
    return str(request.scope.get("root_path", "")).rstrip("/")
