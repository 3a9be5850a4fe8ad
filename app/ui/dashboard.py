"""The Dash UI mounted on the FastAPI application (Dash's FastAPI backend)."""

from __future__ import annotations

from pathlib import Path

from dash import Dash
from fastapi import FastAPI

from app.services.context import Services
from app.ui import shell

#: Static assets (CSS, the streaming-upload script) at the repository's top level.
ASSETS_DIR = Path(__file__).resolve().parents[2] / "assets"


def build_dash(server: FastAPI, services: Services) -> Dash:
    """Create the Dash app on ``server`` and register every page's callbacks."""
    app = Dash(__name__, server=server,  # type: ignore[arg-type]  # stubs predate backends
               assets_folder=str(ASSETS_DIR), title="calibdash",
               suppress_callback_exceptions=True, update_title="")
    app.layout = shell.shell_layout()
    shell.register(app, services)
    return app
