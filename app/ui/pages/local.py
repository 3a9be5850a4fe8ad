"""Local page (being built)."""

from __future__ import annotations

from dash import Dash, html

from app.services.context import Services
from app.ui.components import info_note


def layout(services: Services) -> html.Div:
    return html.Div([html.H1("Local"), info_note("This page is being built.")])


def register(app: Dash, services: Services) -> None:
    """No callbacks yet."""
