"""Over time page: calibration per time window, the windows that changed, and a
recalibrator fitted on each window and scored on the next."""

from __future__ import annotations

import asyncio
from typing import Any

from dash import Dash, Input, Output, dcc, html

from app.services.context import Services
from app.services.datasets import NotFound
from app.services.timeline import ROLLING_METHODS, timeline_for
from app.ui import ids
from app.ui.components import control, error_note, info_note, weights_note
from app.ui.figures import empty_figure
from app.ui.figures.timeline import rolling_figure, timeline_figure
from app.ui.shell_helpers import dataset_summary, view_options
from calibcore.exceptions import CalibrationInputError
from calibcore.insights import PERIODS

#: Component ids of this page (the shared ones are in app.ui.ids).
TIME_COLUMN = "time-column"
TIME_FREQ = "time-freq"
TIME_METHOD = "time-method"
TIME_VIEW = "time-view"
TIME_STATUS = "time-status"
TIME_GRAPH = "time-graph"
TIME_ROLLING = "time-rolling"

_FREQUENCIES = [{"label": "auto", "value": "auto"},
                *({"label": name, "value": code} for code, name in PERIODS.items())]


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Calibration over time"),
        html.P("Does the model stay calibrated after deployment? Rows are grouped by their "
               "time (calendar periods of dates, or the values of an ordered column); each "
               "window shows ECE and smooth ECE, the observed frequency and the mean "
               "predicted probability with 95% intervals (for a binary model, of class 1 by "
               "default; the top-label view, confidence against accuracy, can fold over- "
               "and under-prediction of class 1 into zero). Windows whose calibration gap "
               "(mean predicted − observed) differs from the first window's are shaded: "
               "Welch's t test, adjusted for the number of windows (Holm). Below, a "
               "recalibrator fitted on each window is scored on the next, as a model "
               "recalibrated on last period's data would have been."),
        html.Div([
            control("Time column", TIME_COLUMN,
                    dcc.Dropdown(id=TIME_COLUMN, clearable=False,
                                 placeholder="the dataset's time column"), wide=True),
            control("Window", TIME_FREQ,
                    dcc.RadioItems(id=TIME_FREQ, options=_FREQUENCIES, value="auto",
                                   inline=True, className="radio")),
            control("Recalibrator (rolling)", TIME_METHOD,
                    dcc.Dropdown(id=TIME_METHOD, value="temperature", clearable=False,
                                 options=list(ROLLING_METHODS))),
            control("View", TIME_VIEW,
                    dcc.RadioItems(id=TIME_VIEW, inline=True, className="radio")),
        ], className="controls"),
        dcc.Loading(html.Div([html.Div(id=TIME_STATUS),
                              dcc.Graph(id=TIME_GRAPH, figure=empty_figure("")),
                              dcc.Graph(id=TIME_ROLLING, figure=empty_figure(""))])),
    ])


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(TIME_COLUMN, "options"), Output(TIME_COLUMN, "value"),
                  Output(TIME_VIEW, "options"), Output(TIME_VIEW, "value"),
                  Input(ids.DATASET_PICKER, "value"))
    async def choose_dataset(dataset_id: str | None) -> tuple[Any, ...]:
        summary = await dataset_summary(services, dataset_id)
        if summary is None:
            return [], None, [], None
        roles = summary["roles"]
        columns = [c for c in (roles.get("time"), *roles["features"]) if c]
        return ([{"label": c + (" (time role)" if c == roles.get("time") else ""), "value": c}
                 for c in columns], roles.get("time"),
                *view_options(summary, ("positive", "top_label")))

    @app.callback(Output(TIME_STATUS, "children"), Output(TIME_GRAPH, "figure"),
                  Output(TIME_ROLLING, "figure"),
                  Input(ids.DATASET_PICKER, "value"), Input(TIME_COLUMN, "value"),
                  Input(TIME_FREQ, "value"), Input(TIME_METHOD, "value"),
                  Input(TIME_VIEW, "value"))
    async def draw(dataset_id: str | None, column: str | None, freq: str | None,
                   method: str | None, view: str | None) -> tuple[Any, Any, Any]:
        blank = empty_figure("")
        if not dataset_id:
            return info_note("Choose or upload a dataset."), blank, blank
        if not column:
            return info_note("This dataset has no time column: choose one above (dates, "
                             "datetimes or an ordered number), or give a column the time "
                             "role when uploading."), blank, blank
        try:
            result = await asyncio.to_thread(
                timeline_for, services, dataset_id, freq=freq or "auto",  # type: ignore[arg-type]
                method=method or "temperature", time=column,
                view=view)  # type: ignore[arg-type]
        except (CalibrationInputError, NotFound) as exc:
            return error_note(str(exc)), blank, blank
        flagged = [w["label"] for w in result["windows"] if w["flagged"]]
        reference = result["windows"][result["reference"]]
        text = ((f"Calibration changed in {len(flagged)}: {', '.join(flagged[:6])}"
                   f"{'…' if len(flagged) > 6 else ''}." if flagged else
                   "No window's calibration gap differs from the reference's.")
                + (f" The reference window's own gap (mean predicted − observed) is "
                   f"{reference['gap']:+.3f}, its ECE {reference['ece']:.3f}. "
                   if reference.get("ece") is not None else " ")
                + " ".join(result["notes"]))
        return (html.Div([weights_note(result), info_note(text)]), timeline_figure(result),
                rolling_figure(result))
