"""The Dash UI mounted on the FastAPI application (Dash's FastAPI backend)."""

from __future__ import annotations

from pathlib import Path

from dash import Dash
from fastapi import FastAPI

from app.services.context import Services
from app.ui import shell
from app.ui.callback_errors import report_callback_error

#: Static assets (CSS, the streaming upload/apply scripts), shipped inside the package.
ASSETS_DIR = Path(__file__).resolve().parent / "assets"


def build_dash(server: FastAPI, services: Services) -> Dash:
    """Create the Dash app on ``server`` and register every page's callbacks."""
    app = Dash(__name__, server=server,  # type: ignore[arg-type]  # stubs predate backends
               assets_folder=str(ASSETS_DIR), title="calibdash",
               suppress_callback_exceptions=True, update_title="",
               on_error=report_callback_error)
    app.layout = shell.shell_layout()
    shell.register(app, services)
    # Dash's FastAPI backend runs this first-request setup (which collects the CSS and
    # scripts in assets/) only for "/" and "/_dash-*" requests, so a first visit to a
    # deep link such as /recalibrate was served without them; run it now instead.
    app._setup_server()
    return app
