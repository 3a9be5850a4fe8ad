"""Decision curves page: the net benefit of acting on the model's probabilities at each
threshold, with its band, against treating every row or none."""

from __future__ import annotations

import asyncio
from typing import Any

from dash import Dash, Input, Output, dcc, html

from app.services.context import Services
from app.services.datasets import NotFound
from app.services.decision import decision_for
from app.ui import ids
from app.ui.components import control, error_note, info_note, weights_note
from app.ui.figures import empty_figure
from app.ui.figures.decision import decision_figure
from app.ui.shell_helpers import dataset_summary
from calibcore.exceptions import CalibrationInputError

#: Component ids of this page (the shared ones are in app.ui.ids).
DECISION_RANGE = "decision-range"
DECISION_SUBSET = "decision-subset"
DECISION_CLASS = "decision-class"
DECISION_STATUS = "decision-status"
DECISION_GRAPH = "decision-graph"

#: The threshold grid: every hundredth within the chosen range.
_STEP = 0.01
_SUBSETS = [{"label": "all rows", "value": "all"},
            {"label": "calibration rows", "value": "calibration"},
            {"label": "test rows", "value": "test"}]


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Decision curves"),
        html.P("Is the model worth acting on? A row is treated (flagged, investigated, "
               "treated) when its probability of the event is at least a threshold; the "
               "threshold says how much a missed event costs against an unneeded treatment "
               "(at threshold t, one false positive weighs t / (1 − t) true positives). Net "
               "benefit counts the true positives per row and charges the false positives "
               "that weight (Vickers & Elkin 2006). The model is worth using at the "
               "thresholds where its curve, band included, lies above both 'treat all' and "
               "'treat none'. Miscalibration moves the curve: an over-confident model treats "
               "rows whose true risk is below the threshold."),
        html.Div([
            control("Threshold range", DECISION_RANGE,
                    dcc.RangeSlider(id=DECISION_RANGE, min=0.01, max=0.99, step=_STEP,
                                    value=[0.01, 0.99], allowCross=False,
                                    marks={v / 10: f"{v / 10:.1f}" for v in range(1, 10)},
                                    tooltip={"placement": "bottom"}), wide=True,
                    note="the curve is drawn at every 0.01 within it"),
            control("Rows", DECISION_SUBSET,
                    dcc.RadioItems(id=DECISION_SUBSET, options=_SUBSETS, value="all",
                                   inline=True, className="radio")),
            control("Event (class)", DECISION_CLASS,
                    dcc.Dropdown(id=DECISION_CLASS, clearable=False)),
        ], className="controls"),
        dcc.Loading(html.Div([html.Div(id=DECISION_STATUS),
                              dcc.Graph(id=DECISION_GRAPH, figure=empty_figure(""),
                                        config={"displaylogo": False})])),
    ])


def grid(low: float, high: float) -> list[float]:
    """Every hundredth from ``low`` to ``high`` (both kept inside (0, 1))."""
    first, last = round(max(low, 0.01) / _STEP), round(min(high, 0.99) / _STEP)
    return [round(k * _STEP, 2) for k in range(first, max(last, first) + 1)]


def summary_text(result: dict[str, Any]) -> str:
    """Where the model's band lies above both strategies, in words."""
    above = [t for t, beats in zip(result["thresholds"], result["beats_both"], strict=True)
             if beats]
    if not any(b is not None for b in result["beats_both"]):
        verdict = ""
    elif not above:
        verdict = ("At no threshold here is the model's band above both treat all and treat "
                   "none: acting on it is not shown to beat the simple strategies. ")
    else:
        verdict = (f"The model's band lies above treat all and treat none at "
                   f"{len(above)} of {len(result['thresholds'])} thresholds, between "
                   f"{above[0]:.2f} and {above[-1]:.2f}. ")
    return verdict + " ".join(result["notes"])


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(DECISION_CLASS, "options"), Output(DECISION_CLASS, "value"),
                  Output(DECISION_SUBSET, "options"),
                  Input(ids.DATASET_PICKER, "value"))
    async def choose_dataset(dataset_id: str | None) -> tuple[Any, ...]:
        summary = await dataset_summary(services, dataset_id)
        if summary is None:
            return [], None, _SUBSETS[:1]
        classes = summary["classes"]
        split = summary["roles"].get("split") is not None
        return ([{"label": str(c), "value": str(c)} for c in classes], str(classes[-1]),
                _SUBSETS if split else _SUBSETS[:1])

    @app.callback(Output(DECISION_STATUS, "children"), Output(DECISION_GRAPH, "figure"),
                  Input(ids.DATASET_PICKER, "value"), Input(DECISION_RANGE, "value"),
                  Input(DECISION_SUBSET, "value"), Input(DECISION_CLASS, "value"))
    async def draw(dataset_id: str | None, window: list[float] | None, subset: str | None,
                   event: str | None) -> tuple[Any, Any]:
        blank = empty_figure("")
        if not dataset_id:
            return info_note("Choose or upload a dataset."), blank
        low, high = window or (0.01, 0.99)
        try:
            result = await asyncio.to_thread(
                decision_for, services, dataset_id, thresholds=grid(low, high),
                subset=subset or "all", positive_class=event)  # type: ignore[arg-type]
        except (CalibrationInputError, NotFound) as exc:
            return error_note(str(exc)), blank
        return (html.Div([weights_note(result), info_note(summary_text(result))]),
                decision_figure(result))
