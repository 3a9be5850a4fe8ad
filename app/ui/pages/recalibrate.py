"""Recalibrate page: the workbench.

Pick several methods (with their options), fit them as one background job with a
progress bar per method, compare them on held-out rows (table with intervals and
the best per column marked, overlaid reliability, paired NLL changes, a
recommendation, the net benefit at chosen thresholds), download corrected probabilities
or fitted recalibrators, and apply a saved recalibrator to a new file
(``assets/apply.js``).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update

from app.jobs import Progress
from app.services.context import Services
from app.services.datasets import NotFound
from app.services.methods import MethodSpec, method_catalogue
from app.services.row_columns import available_row_columns
from app.ui import ids
from app.ui.components import error_note, info_note, progress_bar
from app.ui.figures import empty_figure
from app.ui.figures.recalibration import (
    COMPARISON_VIEWS,
    comparison_views,
    nll_difference_figure,
    overlaid_reliability_figure,
)
from app.ui.job_panel import cost_note, running_status
from app.ui.pages.recalibrate_decision import decision_panel, register_decision
from app.ui.pages.recalibrate_results import (
    comparison_table,
    done_message,
    download_list,
    interval_notes,
    method_progress,
    recommendation_card,
)
from calibcore.exceptions import CalibrationInputError

#: Component ids of this page (the shared ones are in app.ui.ids).
METHOD_SELECT = "method-select"
FIT_BUTTON = "fit-button"
FIT_JOB = "fit-job"
FIT_POLL = "fit-poll"
FIT_PROGRESS = "fit-progress"
FIT_STATUS = "fit-status"
RECAL_RESULTS = "recal-results"
RECAL_GRAPH = "recal-graph"
RECAL_VIEW = "recal-view"  # the overlaid diagram's view (binary: positive class too)
RECAL_COMPARISON_STORE = "recal-comparison-store"
RECAL_TABLE = "recal-table"
RECAL_DOWNLOADS = "recal-downloads"
RECAL_VARIABLE = "recal-variable"
RECAL_FEATURES = "recal-features"
RECAL_LECE_Q = "recal-lece-q"
RECAL_LECE_T = "recal-lece-t"
RECAL_BINS = "recal-bins"
RECAL_LORE_GAMMA = "recal-lore-gamma"
RECAL_VA_FOLDS = "recal-va-folds"
RECAL_PRIOR_RATE = "recal-prior-rate"
RECAL_OPTIONS_NOTE = "recal-options-note"
RECAL_METHOD_PROGRESS = "recal-method-progress"
RECAL_RECOMMENDATION = "recal-recommendation"
RECAL_COST = "recal-cost"  # the cost estimate of the chosen methods
RECAL_NLL_GRAPH = "recal-nll-graph"
RECAL_RESULT_STORE = "recal-result-store"
RECAL_EXTRA_COLUMNS = "recal-extra-columns"
RECAL_EXTRA_LABEL = "recal-extra-label"
APPLY_MODEL_BROWSE = "apply-model-browse"  # also used by assets/apply.js
APPLY_MODEL_NAME = "apply-model-name"  # also used by assets/apply.js
APPLY_DATA_BROWSE = "apply-data-browse"  # also used by assets/apply.js
APPLY_DATA_NAME = "apply-data-name"  # also used by assets/apply.js
APPLY_FORMAT = "apply-format"  # also used by assets/apply.js
APPLY_BUTTON = "apply-button"  # also used by assets/apply.js
APPLY_PROGRESS = "apply-progress"  # also used by assets/apply.js
APPLY_PROGRESS_BAR = "apply-progress-bar"  # also used by assets/apply.js
APPLY_STATUS = "apply-status"  # also used by assets/apply.js

_HIDDEN = {"display": "none"}
#: What the overlaid diagram reads from a comparison (the rest stays on the server).
_DIAGRAM_KEYS = ("n", "rows", "positive_class", *COMPARISON_VIEWS.values())
#: Views of the overlaid held-out diagram (the positive class only for binary data).
_COMPARISON_VIEWS = [{"label": "positive class (binary)", "value": "positive"},
                     {"label": "top label (confidence vs accuracy)", "value": "top_label"}]
#: Options of the page that become method parameters: method -> {parameter: option}.
_OPTION_PARAMS: dict[str, dict[str, str]] = {
    "lece": {"neighborhood_size": "q", "threshold": "t"},
    "lecd": {"neighborhood_size": "q", "threshold": "t"},
    "histogram": {"n_bins": "n_bins"}, "scaling_binning": {"n_bins": "n_bins"},
    "lore": {"gamma": "gamma"}, "venn_abers": {"cross_folds": "va_folds"},
    "prior_shift": {"negative_rate": "prior_rate"},
}


def _method_options() -> list[dict[str, Any]]:
    catalogue = sorted(method_catalogue(), key=lambda m: (m["needs_features"], m["name"]))
    return [{"label": f" {m['name']}" + (" · uses features" if m["needs_features"] else ""),
             "value": m["method"]} for m in catalogue]


def _number(component_id: str, placeholder: str, value: float | None = None,
            step: float | str = "any") -> dcc.Input:
    return dcc.Input(id=component_id, type="number", value=value, placeholder=placeholder,
                     step=step, min=0, className="text-input", debounce=True)


def _options_panel() -> html.Div:
    methods = {m["method"] for m in method_catalogue()}
    fields = [
        html.Div([html.Label("Variable of the variable-based tree (numeric)",
                             className="field-label"),
                  dcc.Dropdown(id=RECAL_VARIABLE, clearable=False,
                               placeholder="choose a numeric feature")], className="control"),
        html.Div([html.Label("Features for LoRe / SWC / SWC-HH (empty: all)",
                             className="field-label"),
                  dcc.Dropdown(id=RECAL_FEATURES, multi=True, placeholder="all features")],
                 className="control control-wide"),
        html.Div([html.Label("LECE/LECD neighbourhood q (fraction)", className="field-label"),
                  _number(RECAL_LECE_Q, "chosen by 10-fold CV")], className="control"),
        html.Div([html.Label("LECE/LECD threshold t", className="field-label"),
                  _number(RECAL_LECE_T, "chosen by 10-fold CV")], className="control"),
        html.Div([html.Label("Bins (histogram, scaling-binning)", className="field-label"),
                  _number(RECAL_BINS, "10", 10, 1)], className="control"),
        html.Div([html.Label("Venn-Abers folds (1: inductive; 2 or more: cross)",
                             className="field-label"),
                  _number(RECAL_VA_FOLDS, "1", 1, 1)], className="control"),
        html.Div([html.Label("Prior shift: fraction of negatives the training data kept",
                             className="field-label"),
                  _number(RECAL_PRIOR_RATE, "estimated from calibration rows")],
                 className="control"),
    ]
    gamma = html.Div([html.Label("LoRe bandwidth γ", className="field-label"),
                      _number(RECAL_LORE_GAMMA, "0.4", 0.4)], className="control",
                     style=None if "lore" in methods else _HIDDEN)
    return html.Div([*fields, gamma], className="controls recal-options")


def _apply_panel() -> html.Div:
    return html.Div([
        html.H2("Apply a saved recalibrator to a new file"),
        html.P("Choose a fitted recalibrator (the JSON downloaded above or from "
               "'calibdash recalibrate --model-out') and a CSV or Parquet file with the same "
               "probability columns (and feature columns, if the method uses them). Labels "
               "are not needed. The file is streamed to the server and comes back with "
               "calibrated_proba_<class> columns (Venn-Abers adds each class's interval, "
               "p0_<class> and p1_<class>)."),
        html.Div([
            html.Div([html.Button("choose model JSON", id=APPLY_MODEL_BROWSE,
                                  className="button button-secondary"),
                      html.Span("no model chosen", id=APPLY_MODEL_NAME,
                                className="apply-name")], className="control"),
            html.Div([html.Button("choose data file", id=APPLY_DATA_BROWSE,
                                  className="button button-secondary"),
                      html.Span("no file chosen", id=APPLY_DATA_NAME,
                                className="apply-name")], className="control"),
            html.Div([html.Label("Output", className="field-label", htmlFor=APPLY_FORMAT),
                      html.Select([html.Option("CSV", value="csv"),
                                   html.Option("Parquet", value="parquet")],
                                  id=APPLY_FORMAT, className="text-input")],
                     className="control"),
            html.Div(html.Button("Apply and download", id=APPLY_BUTTON, className="button"),
                     className="control"),
        ], className="controls apply-controls"),
        progress_bar(APPLY_PROGRESS_BAR, APPLY_PROGRESS),
        html.Div(id=APPLY_STATUS, role="status"),
    ], className="panel")


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Recalibrate"),
        html.P("Fit recalibrators on the calibration rows (the split column; without one, "
               "5-fold cross-fitting) and compare them on held-out rows with bootstrap "
               "intervals. Download the corrected probabilities or the fitted recalibrator, "
               "and apply it to new files below."),
        html.Div([html.Label("Methods", className="field-label"),
                  dcc.Checklist(id=METHOD_SELECT, options=_method_options(),
                                value=["temperature"], className="checklist method-grid")],
                 className="panel method-panel"),
        html.H3("Method options"),
        _options_panel(),
        html.Div(id=RECAL_OPTIONS_NOTE),
        html.Div(id=RECAL_COST, className="cost-line"),
        html.Button("Fit and compare", id=FIT_BUTTON, className="button"),
        progress_bar(FIT_PROGRESS, f"{FIT_PROGRESS}-wrapper"),
        html.Div(id=RECAL_METHOD_PROGRESS, className="method-progress"),
        html.Div(id=FIT_STATUS),
        dcc.Store(id=FIT_JOB),
        dcc.Store(id=RECAL_RESULT_STORE),
        dcc.Interval(id=FIT_POLL, interval=400, disabled=True),
        html.Div(id=RECAL_RESULTS, style=_HIDDEN, children=[
            html.H2("Comparison on held-out rows"),
            html.Div(id=RECAL_TABLE),
            html.Div(id=RECAL_RECOMMENDATION),
            dcc.Store(id=RECAL_COMPARISON_STORE),
            html.Div([
                html.Div([html.Label("Diagram view", className="field-label"),
                          dcc.RadioItems(id=RECAL_VIEW, options=_COMPARISON_VIEWS,
                                         value="positive", className="radio radio-inline")],
                         id=f"{RECAL_VIEW}-control", className="control", style=_HIDDEN),
                dcc.Graph(id=RECAL_GRAPH, figure=empty_figure("Fit methods to compare."),
                          config={"displaylogo": False}),
                dcc.Graph(id=RECAL_NLL_GRAPH, figure=empty_figure("Fit methods to compare."),
                          config={"displaylogo": False}),
            ]),
            decision_panel(),
            html.H2("Downloads"),
            html.Div([html.Label(id=RECAL_EXTRA_LABEL, className="field-label"),
                      dcc.Checklist(id=RECAL_EXTRA_COLUMNS, options=[], value=[],
                                    className="checklist checklist-inline")]),
            html.Div(id=RECAL_DOWNLOADS),
        ]),
        _apply_panel(),
    ])


def method_specs(methods: list[str], options: dict[str, Any]) -> list[MethodSpec]:
    """The chosen methods with the page's options as their parameters and features."""
    catalogue = {m["method"]: m for m in method_catalogue()}
    specs = []
    for method in methods:
        params = {name: options[option] for name, option in _OPTION_PARAMS.get(method, {}).items()
                  if options.get(option) is not None}
        features = None
        if method == "variable_tree":
            features = [options["variable"]] if options.get("variable") else []
        elif catalogue.get(method, {}).get("needs_features"):
            features = list(options.get("features") or []) or None
        specs.append(MethodSpec(method, params, features))
    return specs


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(RECAL_VARIABLE, "options"), Output(RECAL_VARIABLE, "value"),
                  Output(RECAL_FEATURES, "options"), Output(RECAL_EXTRA_COLUMNS, "options"),
                  Output(RECAL_OPTIONS_NOTE, "children"),
                  Output(RECAL_EXTRA_LABEL, "children"),
                  Input(ids.DATASET_PICKER, "value"))
    async def dataset_options(dataset_id: str | None) -> tuple[Any, ...]:
        if not dataset_id:
            return [], None, [], [], info_note("Choose or upload a dataset."), ""
        try:
            summary = await asyncio.to_thread(services.datasets.summary, dataset_id)
        except LookupError:
            return [], None, [], [], error_note("That dataset no longer exists."), ""
        kinds: dict[str, str] = summary["feature_kinds"]
        numeric = [name for name, kind in kinds.items() if kind == "numeric"]
        extra = await asyncio.to_thread(available_row_columns, services.store, dataset_id)
        note = None if kinds else info_note("This dataset has no feature columns: the methods "
                                            "that use features cannot be fitted.")
        label = ("Add per-row diagnostic columns to the corrected probabilities" if extra else
                 "Per-row LCE, HH or support columns can be added here once computed on the "
                 "Local or Heterogeneity page.")
        return ([{"label": n, "value": n} for n in numeric], numeric[0] if numeric else None,
                [{"label": f"{n} ({k})", "value": n} for n, k in kinds.items()],
                [{"label": f" {n}", "value": n} for n in extra], note, label)

    @app.callback(Output(RECAL_COST, "children"), Input(ids.DATASET_PICKER, "value"),
                  Input(METHOD_SELECT, "value"), Input(RECAL_FEATURES, "value"))
    async def estimate(dataset_id: str | None, methods: list[str] | None,
                       features: list[str] | None) -> Any:
        if not dataset_id or not methods:
            return None
        specs = method_specs(methods, {"features": features})
        try:
            cost = await asyncio.to_thread(services.recalibrations.estimate, dataset_id, specs)
        except (CalibrationInputError, NotFound) as exc:
            return cost_note(None, str(exc))
        return cost_note(cost)

    @app.callback(Output(FIT_JOB, "data"), Output(FIT_POLL, "disabled"),
                  Output(FIT_STATUS, "children", allow_duplicate=True),
                  Input(FIT_BUTTON, "n_clicks"), State(ids.DATASET_PICKER, "value"),
                  State(METHOD_SELECT, "value"), State(RECAL_VARIABLE, "value"),
                  State(RECAL_FEATURES, "value"), State(RECAL_LECE_Q, "value"),
                  State(RECAL_LECE_T, "value"), State(RECAL_BINS, "value"),
                  State(RECAL_LORE_GAMMA, "value"), State(RECAL_VA_FOLDS, "value"),
                  State(RECAL_PRIOR_RATE, "value"), prevent_initial_call=True)
    async def start(clicks: int | None, dataset_id: str | None, methods: list[str] | None,
                    variable: str | None, features: list[str] | None, q: float | None,
                    t: float | None, n_bins: int | None, gamma: float | None,
                    va_folds: int | None, prior_rate: float | None) -> tuple[Any, Any, Any]:
        if not clicks:
            return no_update, no_update, no_update
        if not dataset_id:
            return None, True, error_note("Choose a dataset first.")
        if not methods:
            return None, True, error_note("Choose at least one method.")
        specs = method_specs(methods, {"variable": variable, "features": features, "q": q,
                                       "t": t, "n_bins": n_bins, "gamma": gamma,
                                       "va_folds": va_folds, "prior_rate": prior_rate})
        try:
            await asyncio.to_thread(services.recalibrations.check, dataset_id, specs)
        except CalibrationInputError as exc:
            return None, True, error_note(exc.message)

        def work(progress: Progress) -> dict[str, Any]:
            return services.recalibrations.fit_many(dataset_id, specs, progress=progress)

        estimate = await asyncio.to_thread(services.recalibrations.estimate, dataset_id, specs)
        job = services.jobs.submit("recalibration", work, params={
            "dataset_id": dataset_id, "methods": [asdict(spec) for spec in specs]},
            estimate=estimate.as_dict())
        return job.id, False, info_note(f"Fitting {len(specs)} method(s)…")

    @app.callback(Output(FIT_PROGRESS, "style"), Output(f"{FIT_PROGRESS}-wrapper", "style"),
                  Output(FIT_STATUS, "children"),
                  Output(FIT_POLL, "disabled", allow_duplicate=True),
                  Output(RECAL_METHOD_PROGRESS, "children"),
                  Output(RECAL_RESULTS, "style"), Output(RECAL_TABLE, "children"),
                  Output(RECAL_RECOMMENDATION, "children"),
                  Output(RECAL_COMPARISON_STORE, "data"),
                  Output(RECAL_NLL_GRAPH, "figure"), Output(RECAL_RESULT_STORE, "data"),
                  Input(FIT_POLL, "n_intervals"), State(FIT_JOB, "data"),
                  prevent_initial_call=True)
    def poll(_: int, job_id: str | None) -> tuple[Any, ...]:
        job = services.jobs.get(job_id) if job_id else None
        unchanged = (no_update,) * 6
        if job is None:
            return (no_update, _HIDDEN, no_update, True, no_update, *unchanged)
        snapshot = job.snapshot()
        bar = {"width": f"{snapshot['progress']:.0%}"}
        steps = method_progress(snapshot.get("detail") or [])
        if snapshot["status"] in ("queued", "running"):
            return (bar, {}, running_status(snapshot), False, steps, *unchanged)
        if snapshot["status"] != "succeeded":
            message = (snapshot["error"] or {}).get("message", snapshot["status"])
            failed = error_note(f"Fitting failed: {message}")
            return (bar, _HIDDEN, failed, True, steps, *unchanged)
        result = snapshot["result"]
        comparison = result["comparison"]
        stored = [{"id": r["id"], "name": r["name"], "method": r["method"],
                   "cross_fitted": bool(r.get("cross_fitted"))}
                  for r in result["recalibrations"]]
        return (bar, _HIDDEN, done_message(result), True, steps, {},
                html.Div([comparison_table(comparison),
                          interval_notes(result["recalibrations"])]),
                recommendation_card(comparison),
                {key: comparison[key] for key in _DIAGRAM_KEYS if key in comparison},
                nll_difference_figure(comparison), stored)

    @app.callback(Output(RECAL_GRAPH, "figure"), Output(f"{RECAL_VIEW}-control", "style"),
                  Input(RECAL_COMPARISON_STORE, "data"), Input(RECAL_VIEW, "value"),
                  prevent_initial_call=True)
    def draw_diagrams(comparison: dict[str, Any] | None, view: str) -> tuple[Any, Any]:
        if not comparison:
            return no_update, no_update
        binary = "positive" in comparison_views(comparison)
        return overlaid_reliability_figure(comparison, view), ({} if binary else _HIDDEN)

    register_decision(app, services, RECAL_RESULT_STORE)

    @app.callback(Output(RECAL_DOWNLOADS, "children"),
                  Input(RECAL_RESULT_STORE, "data"), Input(RECAL_EXTRA_COLUMNS, "value"))
    def downloads(stored: list[dict[str, Any]] | None, extra: list[str] | None) -> Any:
        return download_list(stored or [], extra or [])
