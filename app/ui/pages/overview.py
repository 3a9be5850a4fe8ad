"""Overview page: global measures and the binned reliability diagram of one view."""

from __future__ import annotations

import asyncio
from typing import Any

from dash import Dash, Input, Output, dcc, html

from app.services import diagnostics
from app.services.context import Services
from app.ui import ids
from app.ui.components import error_note, info_note, measure_card
from app.ui.figures import empty_figure, reliability_figure
from calibcore.exceptions import CalibrationInputError

_VIEWS = [{"label": "top label (confidence vs accuracy)", "value": "top_label"},
          {"label": "positive class (binary)", "value": "positive"},
          {"label": "classwise (one curve per class)", "value": "classwise"}]


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Overview"),
        html.Div([
            html.Div([html.Label("View", className="field-label"),
                      dcc.RadioItems(id=ids.VIEW_SELECT, options=_VIEWS, value="top_label",
                                     className="radio")], className="control"),
            html.Div([html.Label("Rows", className="field-label"),
                      dcc.RadioItems(id=ids.SUBSET_SELECT, value="all", className="radio",
                                     options=[{"label": "all", "value": "all"},
                                              {"label": "calibration", "value": "calibration"},
                                              {"label": "test", "value": "test"}])],
                     className="control"),
            html.Div([html.Label("Bins", className="field-label"),
                      dcc.Slider(id=ids.BINS_SLIDER, min=5, max=40, step=1, value=15,
                                 marks={5: "5", 10: "10", 15: "15", 20: "20", 30: "30",
                                        40: "40"})], className="control control-wide"),
            html.Div([html.Label("Binning", className="field-label"),
                      dcc.RadioItems(id=ids.BINNING_SELECT, value="equal_width",
                                     className="radio",
                                     options=[{"label": "equal width", "value": "equal_width"},
                                              {"label": "equal mass", "value": "equal_mass"}])],
                     className="control"),
        ], className="controls"),
        html.Div(id=ids.OVERVIEW_NOTE),
        dcc.Loading(html.Div(id=ids.MEASURE_CARDS, className="cards")),
        dcc.Loading(dcc.Graph(id=ids.RELIABILITY_GRAPH, figure=empty_figure("loading…"),
                              config={"displaylogo": False})),
    ])


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(ids.MEASURE_CARDS, "children"), Output(ids.RELIABILITY_GRAPH, "figure"),
                  Output(ids.OVERVIEW_NOTE, "children"),
                  Input(ids.DATASET_PICKER, "value"), Input(ids.VIEW_SELECT, "value"),
                  Input(ids.SUBSET_SELECT, "value"), Input(ids.BINS_SLIDER, "value"),
                  Input(ids.BINNING_SELECT, "value"))
    async def update(dataset_id: str | None, view: str, subset: str, n_bins: int,
                     binning: str) -> tuple[Any, Any, Any]:
        if not dataset_id:
            return [], empty_figure("Choose or upload a dataset."), info_note(
                "No dataset selected.")
        try:
            measures, diagram, summary = await asyncio.to_thread(
                _compute, services, dataset_id, view, subset, n_bins, binning)
        except CalibrationInputError as exc:
            return [], empty_figure(str(exc)), error_note(str(exc))
        return _cards(measures, summary), reliability_figure(diagram), _note(summary, measures)


def _compute(services: Services, dataset_id: str, view: Any, subset: Any, n_bins: int,
             binning: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    prediction_set = services.datasets.prediction_set(dataset_id)
    options = {"view": view, "subset": subset, "n_bins": n_bins, "binning": binning}
    return (diagnostics.global_metrics(prediction_set, **options),
            diagnostics.reliability(prediction_set, **options),
            services.datasets.summary(dataset_id))


def _cards(measures: dict[str, Any], summary: dict[str, Any]) -> list[html.Div]:
    n = f"n = {measures['n']:,}"
    cards = [measure_card("Rows", measures["n"], f"{measures['subset']} rows"),
             measure_card("Classes", summary["n_classes"], ", ".join(summary["classes"][:6]))]
    for item in measures["measures"].values():
        cards.append(measure_card(item["label"], item["value"], n, title=item["meaning"]))
    return cards


def _note(summary: dict[str, Any], measures: dict[str, Any]) -> html.Div:
    split = (f"{summary['n_calibration']:,} calibration and {summary['n_test']:,} test rows"
             if summary.get("n_test") else "no split column (recalibration uses cross-fitting)")
    view = {"top_label": "top-label", "positive": "positive-class",
            "classwise": "classwise"}[measures["view"]]
    return info_note(f"{summary['name']}: {summary['n_rows']:,} rows, {split}. Measures on the "
                     f"{view} view, {measures['n_bins']} {measures['binning'].replace('_', '-')}"
                     " bins." + ("".join(" " + w for w in summary["warnings"])))
