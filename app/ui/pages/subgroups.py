"""Subgroups page: the worst-calibrated slices of one or two feature conditions.

The audit runs as a job (:mod:`app.services.subgroups`); the page starts it, polls it,
lists the slices in a grid (dash-ag-grid: sortable, one row selectable) and draws the
selected slice's reliability diagram beside the whole data's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import dash_ag_grid as dag
from dash import Dash, Input, Output, State, dcc, html, no_update

from app.services.context import Services
from app.services.datasets import NotFound
from app.services.diagnostics import VIEW_NAMES
from app.services.subgroups import MAX_DIAGRAMS, SubgroupParams, start_subgroups
from app.ui import ids
from app.ui.components import control, error_note, grid_number, info_note, weights_note
from app.ui.figures import empty_figure
from app.ui.figures.reliability import slice_figure
from app.ui.job_panel import (
    JobPanel,
    job_panel_layout,
    job_refused,
    job_started,
    register_job_panel,
    start_outputs,
)
from app.ui.shell_helpers import view_options
from calibcore.exceptions import CalibrationInputError

#: Component ids of this page (the shared ones are in app.ui.ids).
SUB_FEATURES = "sub-features"
SUB_BINS = "sub-bins"
SUB_SUPPORT = "sub-support"
SUB_PAIRS = "sub-pairs"
SUB_SUBSET = "sub-subset"
SUB_VIEW = "sub-view"
SUB_RUN = "sub-run"
SUB_JOB = "sub-job"
SUB_POLL = "sub-poll"
SUB_PROGRESS = "sub-progress"
SUB_STATUS = "sub-status"
SUB_CANCEL = "sub-cancel"
SUB_RESULTS = "sub-results"
SUB_GRID = "sub-grid"
SUB_DIAGRAMS = "sub-diagrams"
SUB_GRAPH = "sub-graph"

PANEL = JobPanel(run=SUB_RUN, job=SUB_JOB, poll=SUB_POLL, progress=SUB_PROGRESS,
                 status=SUB_STATUS, cancel=SUB_CANCEL, results=SUB_RESULTS)

_NUMBER = grid_number(".4f")
_P_VALUE = {"function": "params.value == null ? '' : (params.value < 1e-4 ? "
                        "d3.format('.1e')(params.value) : d3.format('.4f')(params.value))"}
_COLUMNS: list[dict[str, Any]] = [
    {"field": "rank", "headerName": "#", "maxWidth": 70, "type": "numericColumn"},
    {"field": "slice", "headerName": "slice", "flex": 4, "minWidth": 320,
     "tooltipField": "slice"},
    {"field": "n", "headerName": "rows", "type": "numericColumn",
     "valueFormatter": grid_number(",")},
    {"field": "gap", "headerName": "gap", "type": "numericColumn",
     "valueFormatter": _NUMBER,
     "headerTooltip": "mean score − observed frequency of the view (top label: mean "
                      "confidence − accuracy; positive class: mean P(class 1) − frequency "
                      "of class 1): positive means the score runs high"},
    {"field": "interval", "headerName": "95% interval", "minWidth": 160},
    {"field": "other_gap", "headerName": "other view", "type": "numericColumn",
     "minWidth": 130, "valueFormatter": _NUMBER,
     "headerTooltip": "binary models: the gap in the other view (top label beside the "
                      "positive class), tested too; each view can hide what the other "
                      "shows"},
    {"field": "smooth_ece", "headerName": "smooth ECE", "type": "numericColumn",
     "minWidth": 115,
     "valueFormatter": _NUMBER},
    {"field": "p_adjusted", "headerName": "p (BH)", "type": "numericColumn",
     "valueFormatter": _P_VALUE,
     "headerTooltip": "t test of gap = 0, adjusted for every slice tried (Benjamini-Hochberg)"},
]


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Worst subgroups"),
        html.P("Where is the model miscalibrated? Every slice of one condition on a feature "
               "(a category, a numeric quantile bin, or missing) or two conditions on two "
               "features, with enough rows, is ranked by its calibration gap: the mean "
               "predicted probability minus the observed frequency (positive: the "
               "probabilities run high). For a binary model the gap is on P(class 1) by "
               "default; in the top-label view (confidence minus accuracy) over- and "
               "under-prediction of class 1 can cancel. Each gap has a 95% t interval and "
               "a p-value adjusted for the number of slices tried (Benjamini-Hochberg), so a "
               "large gap in a small slice is told from noise. This is the multicalibration "
               "audit that one variable at a time (Variables page) cannot give."),
        html.Div([
            control("Features to slice by", SUB_FEATURES,
                    dcc.Dropdown(id=SUB_FEATURES, multi=True,
                                 placeholder="all feature columns"), wide=True),
            control("Bins per numeric feature", SUB_BINS,
                    dcc.Input(id=SUB_BINS, type="number", value=5, min=2, max=20, step=1,
                              debounce=True, className="text-input")),
            control("Least rows in a slice", SUB_SUPPORT,
                    dcc.Input(id=SUB_SUPPORT, type="number", min=0, debounce=True,
                              placeholder="1% of rows, at least 100", className="text-input"),
                    note="a count, or a fraction below 1"),
            control("Rows", SUB_SUBSET,
                    dcc.RadioItems(id=SUB_SUBSET, value="all", inline=True,
                                   className="radio", options=[
                                       {"label": "all", "value": "all"},
                                       {"label": "calibration", "value": "calibration"},
                                       {"label": "test", "value": "test"}]),
                    dcc.Checklist(id=SUB_PAIRS, value=["pairs"], className="checklist",
                                  options=[{"label": "pairs of conditions", "value": "pairs"}])),
            control("View", SUB_VIEW,
                    dcc.RadioItems(id=SUB_VIEW, inline=True, className="radio")),
        ], className="controls"),
        *job_panel_layout(PANEL, run_label="Find the worst subgroups"),
    ])


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(SUB_FEATURES, "options"), Output(SUB_FEATURES, "value"),
                  Output(SUB_RESULTS, "children"), Output(SUB_JOB, "data"),
                  Output(SUB_VIEW, "options"), Output(SUB_VIEW, "value"),
                  Input(ids.DATASET_PICKER, "value"))
    async def choose_dataset(dataset_id: str | None) -> tuple[Any, ...]:
        if not dataset_id:
            return [], [], info_note("Choose or upload a dataset."), None, [], None
        try:
            summary = await asyncio.to_thread(services.datasets.summary, dataset_id)
        except NotFound as exc:
            return [], [], error_note(str(exc)), None, [], None
        options = [{"label": f"{name} ({summary['feature_kinds'].get(name, '')})",
                    "value": name} for name in summary["roles"]["features"]]
        return (options, [], None, None, *view_options(summary, ("positive", "top_label")))

    @app.callback(*start_outputs(PANEL), Input(SUB_RUN, "n_clicks"),
                  State(ids.DATASET_PICKER, "value"), State(SUB_FEATURES, "value"),
                  State(SUB_BINS, "value"), State(SUB_SUPPORT, "value"),
                  State(SUB_PAIRS, "value"), State(SUB_SUBSET, "value"),
                  State(SUB_VIEW, "value"), prevent_initial_call=True)
    async def start(clicks: int | None, dataset_id: str | None, features: list[str] | None,
                    n_bins: float | None, support: float | None, pairs: list[str] | None,
                    subset: str | None, view: str | None) -> tuple[Any, ...]:
        if not clicks or not dataset_id:
            return job_refused("Choose a dataset first.")
        if n_bins is None or n_bins != int(n_bins) or not 2 <= n_bins <= 20:
            return job_refused("Bins per numeric feature must be a whole number from 2 to 20.")
        if support is not None and support <= 0:
            return job_refused("The least rows in a slice must be positive (a count, or a "
                               "fraction below 1), or empty for the default.")
        params = SubgroupParams(features=tuple(features) if features else None,
                                n_bins=int(n_bins), min_support=support,
                                pairs=bool(pairs), subset=subset or "all",  # type: ignore[arg-type]
                                view=view)  # type: ignore[arg-type]
        try:
            job = await asyncio.to_thread(start_subgroups, services, dataset_id, params)
        except (CalibrationInputError, NotFound) as exc:
            return job_refused(str(exc))
        return job_started(job.id, "Slicing…")

    register_job_panel(app, services, PANEL, what="Subgroups", done=_done, render=_results)

    @app.callback(Output(SUB_GRAPH, "figure"), Input(SUB_GRID, "selectedRows"),
                  State(SUB_DIAGRAMS, "data"), prevent_initial_call=True)
    def draw(selected: list[dict[str, Any]] | None, diagrams: dict[str, Any] | None) -> Any:
        if not selected or not diagrams:
            return no_update
        rank = int(selected[0]["rank"])
        if rank > len(diagrams["slices"]):
            return empty_figure(f"Diagrams come with the worst {MAX_DIAGRAMS} slices only.")
        return slice_figure(diagrams["whole"], diagrams["slices"][rank - 1],
                            selected[0]["slice"], diagrams.get("view", "top_label"))


def _done(result: dict[str, Any]) -> str:
    significant = sum(1 for s in result["subgroups"] if s["p_adjusted"] < 0.05)
    return (f"{result['n_tried']:,} slices of at least {result['min_support']:,} of "
            f"{result['n_rows']:,} rows tried; {significant} of the {len(result['subgroups'])} "
            "listed differ from calibrated at the 5% level after adjustment.")


def _results(result: dict[str, Any]) -> html.Div:
    rows = [{**s, "interval": f"{s['gap_low']:.4f} – {s['gap_high']:.4f}"}
            for s in result["subgroups"]]
    columns = (_COLUMNS if not result.get("weighted") else [
        *_COLUMNS[:3], {"field": "n_eff", "headerName": "n_eff", "type": "numericColumn",
                        "valueFormatter": grid_number(",.0f"),
                        "headerTooltip": "Kish's effective sample size of the slice's "
                                         "weighted rows, (sum w)^2 / sum w^2"},
        *_COLUMNS[3:]])
    grid = dag.AgGrid(
        id=SUB_GRID, columnDefs=columns, rowData=rows,
        defaultColDef={"sortable": True, "resizable": True, "minWidth": 90, "flex": 1},
        dashGridOptions={"rowSelection": {"mode": "singleRow", "enableClickSelection": True,
                                          "checkboxes": False},
                         "tooltipShowDelay": 300, "pagination": True,
                         "paginationPageSize": 15, "paginationPageSizeSelector": False},
        selectedRows=rows[:1],
        style={"height": "520px"}, className="ag-theme-alpine")
    first = result["subgroups"][0]
    view = result.get("view", "top_label")
    figure = slice_figure(result["whole"], result["diagrams"][0], first["slice"], view) \
        if result["diagrams"] else empty_figure("No slice to draw.")
    return html.Div([
        weights_note(result),
        html.Details([html.Summary(f"How these were found ({len(result['notes'])} notes)"),
                      html.Ul([html.Li(note) for note in result["notes"]])],
                     className="hh-notes"),
        html.P(f"Whole data: gap {result['gap']:+.4f} ({VIEW_NAMES[view]} view). Click a "
               "row to see that slice's reliability beside all rows'."),
        grid,
        dcc.Store(id=SUB_DIAGRAMS, data={"whole": result["whole"], "view": view,
                                             "slices": result["diagrams"]}),
        dcc.Graph(id=SUB_GRAPH, figure=figure, config={"displaylogo": False}),
    ])
