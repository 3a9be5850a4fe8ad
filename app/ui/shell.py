"""The page shell: header, navigation, dataset picker and the page router."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs

from dash import Dash, Input, Output, State, dcc, html, no_update

from app.diagnostics import DIAGNOSTICS
from app.services.context import Services
from app.services.datasets import sample_note
from app.ui import ids

#: path -> (navigation label, page module with ``layout`` and ``register``), from the
#: registry of diagnostics
PAGES: dict[str, tuple[str, ModuleType]] = {
    diagnostic.path: (diagnostic.label, diagnostic.page_module()) for diagnostic in DIAGNOSTICS}


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
        html.Div(id=ids.SAMPLE_BANNER, role="note"),
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
        options = [{"label": _picker_label(d), "value": d["id"]} for d in listed]
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

    @app.callback(Output(ids.SAMPLE_BANNER, "children"), Output(ids.SAMPLE_BANNER, "className"),
                  Input(ids.DATASET_PICKER, "value"), Input(ids.URL, "pathname"))
    async def sample_banner(dataset_id: str | None, pathname: str | None) -> tuple[Any, str]:
        if not dataset_id:
            return None, "sample-banner-off"
        try:
            meta = (await asyncio.to_thread(services.datasets.record, dataset_id)).meta
        except LookupError:
            return None, "sample-banner-off"
        note = sample_note(meta)
        if note is None:
            return None, "sample-banner-off"
        external = meta["external"]
        exact = ("In the positive-class view of a binary file or the top-label view, with "
                 "equal-width bins and all or test rows, the measures, the test of "
                 "calibration and the reliability diagrams use every one of the "
                 f"{external['n_rows']:,} rows (from per-partition summaries on Dask); "
                 "everything else is "
                 if pathname == "/overview" else "Every figure on this page is ")
        return [html.Strong("Sampled data. "), f"{exact}{note}. The files stay at ",
                html.Code(external["uri"]), "."], "note note-warning sample-banner"

    for _, module in PAGES.values():
        register_page: Callable[[Dash, Services], None] = module.register
        register_page(app, services)


def _picker_label(summary: dict[str, Any]) -> str:
    external = summary.get("external")
    rows = (f"{external['n_rows']:,} rows, a sample of {summary['n_rows']:,}"
            if external and external.get("sampled") else f"{summary['n_rows']:,} rows")
    if summary.get("n_left_out"):  # the Overview's note says why
        rows += f", {summary['n_left_out']:,} left out"
    return f"{summary['name']} ({rows}, {summary['n_classes']} classes)"


def _query_dataset(href: str | None) -> str | None:
    if not href or "?" not in href:
        return None
    values = parse_qs(href.split("?", 1)[1]).get("dataset")
    return values[0] if values else None
