"""Compare page: several models' probabilities of the same rows: each
measure per model with its interval, the paired difference to a reference model, and
the models' reliability diagrams overlaid."""

from __future__ import annotations

import asyncio
from typing import Any

import dash_ag_grid as dag
from dash import Dash, Input, Output, dcc, html

from app.services.context import Services
from app.services.datasets import NotFound
from app.services.diagnostics import VIEW_NAMES
from app.services.models_compare import compare_for
from app.ui import ids
from app.ui.components import control, error_note, info_note, weights_note
from app.ui.figures import empty_figure
from app.ui.figures.reliability import models_figure
from app.ui.shell_helpers import dataset_summary, view_options
from calibcore.exceptions import CalibrationInputError

#: Component ids of this page (the shared ones are in app.ui.ids).
COMPARE_REFERENCE = "compare-reference"
COMPARE_VIEW = "compare-view"
COMPARE_STATUS = "compare-status"
COMPARE_GRID = "compare-grid"
COMPARE_GRAPH = "compare-graph"

#: The measures listed, in order (every one has a paired difference but kCE and smCE).
_SHOWN = ("nll", "brier", "accuracy", "ece", "smooth_ece", "laplace_kernel_calibration_error")


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Compare models"),
        html.P("Several models scored on the same rows: each measure per model with its 95% "
               "interval, and each model's difference to the reference with a paired "
               "bootstrap interval and p-value (the rows are shared, so one resample serves "
               "every model, which makes the difference far more precise than two separate "
               "intervals suggest). A file holds several models when each one's columns "
               "share a prefix: gbm_proba_0, gbm_proba_1, lr_proba_0, …"),
        html.Div([control("Reference model", COMPARE_REFERENCE,
                          dcc.Dropdown(id=COMPARE_REFERENCE, clearable=False)),
                  control("View", COMPARE_VIEW,
                          dcc.RadioItems(id=COMPARE_VIEW, inline=True, className="radio"))],
                 className="controls"),
        dcc.Loading(html.Div([
            html.Div(id=COMPARE_STATUS),
            dag.AgGrid(id=COMPARE_GRID, columnDefs=[], rowData=[],
                       defaultColDef={"resizable": True, "sortable": True, "flex": 1,
                                      "minWidth": 110},
                       dashGridOptions={"domLayout": "autoHeight", "tooltipShowDelay": 300},
                       className="ag-theme-alpine"),
            dcc.Graph(id=COMPARE_GRAPH, figure=empty_figure("")),
        ])),
    ])


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(COMPARE_REFERENCE, "options"),
                  Output(COMPARE_REFERENCE, "value"), Output(COMPARE_VIEW, "options"),
                  Output(COMPARE_VIEW, "value"), Input(ids.DATASET_PICKER, "value"))
    async def choose_dataset(dataset_id: str | None) -> tuple[Any, ...]:
        summary = await dataset_summary(services, dataset_id)
        views, view = view_options(summary, ("positive", "top_label", "classwise"))
        if summary is None:
            return [], None, views, view
        names = [name for name, _ in summary["roles"].get("models", [])]
        return names, names[0] if names else None, views, view

    @app.callback(Output(COMPARE_STATUS, "children"), Output(COMPARE_GRID, "rowData"),
                  Output(COMPARE_GRID, "columnDefs"), Output(COMPARE_GRAPH, "figure"),
                  Input(ids.DATASET_PICKER, "value"), Input(COMPARE_REFERENCE, "value"),
                  Input(COMPARE_VIEW, "value"))
    async def draw(dataset_id: str | None, reference: str | None,
                   view: str | None) -> tuple[Any, ...]:
        blank = empty_figure("")
        if not dataset_id:
            return info_note("Choose or upload a dataset."), [], [], blank
        try:
            result = await asyncio.to_thread(compare_for, services, dataset_id,
                                             reference=reference,
                                             view=view,  # type: ignore[arg-type]
                                             n_bootstrap=services.settings.n_bootstrap)
        except (CalibrationInputError, NotFound) as exc:
            return error_note(str(exc)), [], [], blank
        rows, columns = _table(result)
        text = (f"{len(result['models'])} models on {result['n']:,} rows; differences to "
                f"{result['reference']}; measures on the "
                f"{VIEW_NAMES[result['view']]} view. {result['note'].capitalize()}."
                + (f" {result['sample_note']}." if result.get("sample_note") else ""))
        return (html.Div([weights_note(result), info_note(text)]), rows, columns,
                models_figure(result))


def _table(result: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One row per measure; per model its value [interval] and, for the others, the
    difference to the reference [interval] with its p-value."""
    first = result["models"][0]["measures"]
    rows = []
    for key in (k for k in _SHOWN if k in first):
        row: dict[str, Any] = {"measure": first[key]["name"]}
        for model in result["models"]:
            item = model["measures"][key]
            row[model["name"]] = _value(item["value"], item["low"], item["high"])
            difference = model["differences"].get(key)
            if difference is not None:
                row[f"{model['name']}:diff"] = _value(difference["value"], difference["low"],
                                                      difference["high"], True)
                row[f"{model['name']}:p"] = f"{difference['p_value']:.2g}"
        rows.append(row)
    columns = [{"field": "measure", "pinned": "left", "minWidth": 150}]
    for model in result["models"]:
        reference = model["name"] == result["reference"]
        columns.append({"field": model["name"],
                        "headerName": model["name"] + (" (reference)" if reference else ""),
                        "minWidth": 190})
        if not reference:
            columns += [{"field": f"{model['name']}:diff", "minWidth": 210,
                         "headerName": f"{model['name']} − {result['reference']}",
                         "headerTooltip": "paired bootstrap difference to the reference, "
                                          "with its 95% interval"},
                        {"field": f"{model['name']}:p", "headerName": "p", "minWidth": 100,
                         "maxWidth": 110, "headerTooltip": "p-value of no difference"}]
    return rows, columns


def _value(value: float | None, low: float | None, high: float | None,
           signed: bool = False) -> str:
    if value is None:
        return "—"
    shown = f"{value:+.4f}" if signed else f"{value:.4f}"
    return shown if low is None or high is None else f"{shown} [{low:.4f}, {high:.4f}]"
