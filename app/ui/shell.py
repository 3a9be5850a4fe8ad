"""The page shell: header, navigation, dataset picker and the page router."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs

from dash import Dash, Input, Output, State, dcc, html, no_update

from app.services.context import Services
from app.ui import ids
from app.ui.pages import data, heterogeneity, local, overview, recalibrate, variables

#: path -> (navigation label, page module with ``layout`` and ``register``)
PAGES: dict[str, tuple[str, ModuleType]] = {
    "/": ("Data", data),
    "/overview": ("Overview", overview),
    "/variables": ("Variables", variables),
    "/local": ("Local", local),
    "/heterogeneity": ("Heterogeneity", heterogeneity),
    "/recalibrate": ("Recalibrate", recalibrate),
}


def shell_layout(sign_out: bool = False) -> html.Div:
    """The page frame; ``sign_out`` adds a sign-out link (when a token protects the server)."""
    return html.Div([
        dcc.Location(id=ids.URL, refresh="callback-nav"),
        dcc.Store(id=ids.DATASET_STORE, storage_type="session"),
        html.Header([
            html.Div([html.Span("calib", className="brand-a"), html.Span("dash",
                      className="brand-b")], className="brand"),
            html.Nav(id=ids.NAV, className="nav"),
            html.Div([html.Label("Dataset", htmlFor=ids.DATASET_PICKER),
                      dcc.Dropdown(id=ids.DATASET_PICKER, clearable=False,
                                   placeholder="choose a dataset", className="picker")],
                     className="picker-box"),
            *([html.A("Sign out", href="/sign-out", id=ids.SIGN_OUT, className="sign-out")]
                   if sign_out else []),
        ], className="header"),
        html.Main(id=ids.PAGE, className="page"),
        html.Div(id=ids.CALLBACK_ERROR, role="alert", className="callback-error"),
        html.Footer("calibdash — calibration diagnostics. Every number shows its sample size; "
                    "every curve its 95% band.", className="footer"),
    ])


def register(app: Dash, services: Services) -> None:
    """Routing, navigation and dataset-picker callbacks, then each page's callbacks."""

    @app.callback(Output(ids.PAGE, "children"), Output(ids.NAV, "children"),
                  Input(ids.URL, "pathname"), light=True)
    def route(pathname: str | None) -> tuple[Any, list[Any]]:
        path = pathname if pathname in PAGES else "/"
        nav = [dcc.Link(label, href=href, className="nav-link active" if href == path
                        else "nav-link") for href, (label, _) in PAGES.items()]
        return PAGES[path][1].layout(services), nav

    @app.callback(Output(ids.DATASET_PICKER, "options"), Output(ids.DATASET_PICKER, "value"),
                  Input(ids.URL, "href"), State(ids.DATASET_STORE, "data"))
    async def refresh_picker(href: str | None, stored: str | None) -> tuple[Any, Any]:
        listed = await asyncio.to_thread(services.datasets.list)
        options = [{"label": f"{d['name']} ({d['n_rows']:,} rows, {d['n_classes']} classes)",
                    "value": d["id"]} for d in listed]
        known = {d["id"] for d in listed}
        wanted = _query_dataset(href)
        for candidate in (wanted, stored, listed[-1]["id"] if listed else None):
            if candidate in known:
                return options, candidate
        return options, None

    @app.callback(Output(ids.DATASET_STORE, "data"), Input(ids.DATASET_PICKER, "value"),
                  light=True)
    def remember(dataset_id: str | None) -> Any:
        return dataset_id if dataset_id else no_update

    for _, module in PAGES.values():
        register_page: Callable[[Dash, Services], None] = module.register
        register_page(app, services)


def _query_dataset(href: str | None) -> str | None:
    if not href or "?" not in href:
        return None
    values = parse_qs(href.split("?", 1)[1]).get("dataset")
    return values[0] if values else None
