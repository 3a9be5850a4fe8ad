"""Overview page: global measures with intervals, a test of calibration with the KS and
Kuiper tests beside it, binned (Wilson or Clopper-Pearson intervals per bin) and smooth
reliability diagrams, and how binned ECE moves with the bin count while the consistent
measures do not."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, replace
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update

from app.jobs import Progress
from app.services import diagnostics
from app.services.context import Services
from app.services.datasets import rows_caption
from app.ui import ids
from app.ui.components import error_note, info_note, measure_card, progress_bar
from app.ui.figures import (
    bin_sensitivity_figure,
    empty_figure,
    reliability_figure,
    smooth_reliability_figure,
)
from calibcore.data import View
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import Binning, IntervalMethod

#: Component ids of this page (the shared ones are in app.ui.ids).
VIEW_SELECT = "view-select"
BINS_SLIDER = "bins-slider"
BINNING_SELECT = "binning-select"
SUBSET_SELECT = "subset-select"
MEASURE_CARDS = "measure-cards"
RELIABILITY_GRAPH = "reliability-graph"
CLASS_SELECT = "class-select"
OVERVIEW_NOTE = "overview-note"
MEASURES_TABLE = "measures-table"
CALIBRATION_TEST = "calibration-test"
MEASURES_JOB = "measures-job"
MEASURES_POLL = "measures-poll"
MEASURES_PROGRESS = "measures-progress"
SMOOTH_GRAPH = "smooth-graph"
BINS_GRAPH = "bins-graph"
INTERVAL_SELECT = "interval-select"
CUMULATIVE_TESTS = "cumulative-tests"

_VIEWS = [{"label": "positive class (P(class 1) vs its frequency; binary)", "value": "positive"},
          {"label": "top label (confidence vs accuracy)", "value": "top_label"},
          {"label": "classwise (one curve per class)", "value": "classwise"}]
_CARDS = ("accuracy", "ece", "smooth_ece", "brier", "nll")
_INTERVALS = [{"label": "Wilson", "value": "wilson"},
              {"label": "Clopper-Pearson (exact: at least 95% in every bin, wider)",
               "value": "clopper_pearson"}]


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Overview"),
        html.Div([
            html.Div([html.Label("View", className="field-label"),
                      dcc.RadioItems(id=VIEW_SELECT, options=_VIEWS, value=None,
                                     className="radio")], className="control"),
            html.Div([html.Label("Rows", className="field-label"),
                      dcc.RadioItems(id=SUBSET_SELECT, value="all", className="radio",
                                     options=[{"label": "all", "value": "all"},
                                              {"label": "calibration", "value": "calibration"},
                                              {"label": "test", "value": "test"}])],
                     className="control"),
            html.Div([html.Label("Bins (binned measures and diagram)", className="field-label"),
                      dcc.Slider(id=BINS_SLIDER, min=5, max=40, step=1, value=15,
                                 marks={5: "5", 10: "10", 15: "15", 20: "20", 30: "30",
                                        40: "40"})], className="control control-wide"),
            html.Div([html.Label("Binning", className="field-label"),
                      dcc.RadioItems(id=BINNING_SELECT, value="equal_width",
                                     className="radio",
                                     options=[{"label": "equal width", "value": "equal_width"},
                                              {"label": "equal mass", "value": "equal_mass"}])],
                     className="control"),
        ], className="controls"),
        html.Div(id=OVERVIEW_NOTE),
        dcc.Loading(html.Div(id=MEASURE_CARDS, className="cards")),
        html.H2("Measures"),
        progress_bar(MEASURES_PROGRESS, f"{MEASURES_PROGRESS}-wrapper"),
        dcc.Store(id=MEASURES_JOB),
        dcc.Interval(id=MEASURES_POLL, interval=500, disabled=True),
        html.Div(id=MEASURES_TABLE),
        html.H2("Reliability"),
        html.Div([html.Label("Per-bin interval of the binned diagram",
                             className="field-label"),
                  dcc.RadioItems(id=INTERVAL_SELECT, options=_INTERVALS, value="wilson",
                                 className="radio")], className="control"),
        html.Div([
            dcc.Loading(dcc.Graph(id=RELIABILITY_GRAPH, figure=empty_figure("loading…"),
                                  config={"displaylogo": False})),
            dcc.Loading(dcc.Graph(id=SMOOTH_GRAPH, figure=empty_figure("loading…"),
                                  config={"displaylogo": False})),
        ], className="two-columns"),
        dcc.Loading(dcc.Graph(id=BINS_GRAPH, figure=empty_figure("loading…"),
                              config={"displaylogo": False})),
    ])


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(VIEW_SELECT, "value"), Output(VIEW_SELECT, "options"),
                  Input(ids.DATASET_PICKER, "value"))
    def default_view(dataset_id: str | None) -> tuple[Any, ...]:
        """A dataset opens in its default view (positive for two classes: the top-label
        view folds a binary problem, so over- and under-confidence can cancel); the
        positive view is offered for two classes only."""
        if not dataset_id:
            return no_update, no_update
        try:
            view = diagnostics.dataset_view(services, dataset_id, None)
        except CalibrationInputError:
            return no_update, no_update
        binary = view == "positive"
        return view, [{**option, "disabled": option["value"] == "positive" and not binary}
                      for option in _VIEWS]

    @app.callback(Output(MEASURE_CARDS, "children"), Output(RELIABILITY_GRAPH, "figure"),
                  Output(SMOOTH_GRAPH, "figure"), Output(BINS_GRAPH, "figure"),
                  Output(OVERVIEW_NOTE, "children"), Output(MEASURES_TABLE, "children"),
                  Output(MEASURES_JOB, "data"), Output(MEASURES_POLL, "disabled"),
                  Input(ids.DATASET_PICKER, "value"), Input(VIEW_SELECT, "value"),
                  Input(SUBSET_SELECT, "value"), Input(BINS_SLIDER, "value"),
                  Input(BINNING_SELECT, "value"), State(INTERVAL_SELECT, "value"))
    async def update(dataset_id: str | None, view: View | None, subset: diagnostics.Subset,
                     n_bins: int, binning: Binning,
                     interval: IntervalMethod | None) -> tuple[Any, ...]:
        if not dataset_id:
            blank = empty_figure("Choose or upload a dataset.")
            return [], blank, blank, blank, info_note("No dataset selected."), None, None, True
        try:
            view = diagnostics.dataset_view(services, dataset_id, view)
        except CalibrationInputError as exc:
            blank = empty_figure(str(exc))
            return [], blank, blank, blank, error_note(str(exc)), None, None, True
        request = diagnostics.MetricsRequest(view=view, n_bins=n_bins, binning=binning,
                                             subset=subset)
        # the intervals (the longest part) start first, on the job runner, so they are
        # computed while this thread draws the figures
        full = diagnostics.cached_metrics(services, dataset_id, request)
        job_id = None if full is not None else _start_interval_job(services, dataset_id,
                                                                     request)
        try:
            quick, diagram, sensitivity, summary = await asyncio.to_thread(
                _compute, services, dataset_id, request, interval or "wilson")
        except CalibrationInputError as exc:
            blank = empty_figure(str(exc))
            return [], blank, blank, blank, error_note(str(exc)), None, None, True
        table = measures_table(full or quick, with_intervals=full is not None)
        return (_cards(full or quick, summary), reliability_figure(diagram),
                smooth_reliability_figure(diagram), bin_sensitivity_figure(sensitivity, n_bins),
                _note(summary, quick), table, job_id, full is not None)

    @app.callback(Output(MEASURES_TABLE, "children", allow_duplicate=True),
                  Output(MEASURE_CARDS, "children", allow_duplicate=True),
                  Output(MEASURES_PROGRESS, "style"),
                  Output(f"{MEASURES_PROGRESS}-wrapper", "style"),
                  Output(MEASURES_POLL, "disabled", allow_duplicate=True),
                  Input(MEASURES_POLL, "n_intervals"), State(MEASURES_JOB, "data"),
                  State(ids.DATASET_PICKER, "value"), prevent_initial_call=True)
    def poll(_: int, job_id: str | None, dataset_id: str | None) -> tuple[Any, ...]:
        job = services.jobs.get(job_id) if job_id else None
        if job is None or not dataset_id:
            return no_update, no_update, no_update, {"display": "none"}, True
        snapshot = job.snapshot()
        bar = {"width": f"{snapshot['progress']:.0%}"}
        if snapshot["status"] in ("queued", "running"):
            return no_update, no_update, bar, {}, False
        if snapshot["status"] != "succeeded":
            message = (snapshot["error"] or {}).get("message", snapshot["status"])
            return error_note(f"Intervals failed: {message}"), no_update, bar, \
                {"display": "none"}, True
        result = snapshot["result"]
        summary = services.datasets.summary(dataset_id)
        return measures_table(result, with_intervals=True), _cards(result, summary), bar, \
            {"display": "none"}, True

    @app.callback(Output(RELIABILITY_GRAPH, "figure", allow_duplicate=True),
                  Input(INTERVAL_SELECT, "value"), State(ids.DATASET_PICKER, "value"),
                  State(VIEW_SELECT, "value"), State(SUBSET_SELECT, "value"),
                  State(BINS_SLIDER, "value"), State(BINNING_SELECT, "value"),
                  prevent_initial_call=True)
    async def redraw_intervals(interval: IntervalMethod, dataset_id: str | None,
                               view: View | None, subset: diagnostics.Subset, n_bins: int,
                               binning: Binning) -> Any:
        """The binned diagram again with the chosen per-bin interval (the rest of the page
        does not depend on it)."""
        if not dataset_id:
            return no_update
        try:
            request = diagnostics.MetricsRequest(
                view=diagnostics.dataset_view(services, dataset_id, view), n_bins=n_bins,
                binning=binning, subset=subset)
            diagram = await asyncio.to_thread(diagnostics.reliability_for, services,
                                              dataset_id, request, interval)
        except CalibrationInputError as exc:
            return empty_figure(str(exc))
        return reliability_figure(diagram)


Computed = tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]


def _compute(services: Services, dataset_id: str, request: diagnostics.MetricsRequest,
             interval: IntervalMethod = "wilson") -> Computed:
    """Values without intervals (fast), both diagrams and the bin sensitivity: each
    cached, so a second visit draws at once."""
    quick = diagnostics.metrics_for(services, dataset_id, replace(request, n_bootstrap=0))
    diagram = diagnostics.reliability_for(services, dataset_id, request, interval)
    sensitivity = diagnostics.bin_sensitivity_for(services, dataset_id, view=request.view,
                                                  subset=request.subset,
                                                  bin_free=quick["measures"])
    return quick, diagram, sensitivity, services.datasets.summary(dataset_id)


def _start_interval_job(services: Services, dataset_id: str,
                        request: diagnostics.MetricsRequest) -> str:
    def work(progress: Progress) -> dict[str, Any]:
        return diagnostics.metrics_for(services, dataset_id, request, progress=progress)

    estimate = diagnostics.estimate_metrics(services, dataset_id, request)
    return services.jobs.submit("metrics", work,
                                params={"dataset_id": dataset_id, **asdict(request)},
                                estimate=estimate.as_dict()).id


def measures_table(result: dict[str, Any], *, with_intervals: bool) -> html.Div:
    """Every measure: value, 95% interval, whether it is consistent, meaning.

    Consistent calibration measures in the sense of Błasiok et al. 2023.
    """
    header = html.Tr([html.Th(h) for h in ("measure", "estimate", "95% interval", "plug-in",
                                           "consistent", "what it says")])
    rows = []
    for key, item in result["measures"].items():
        if item["value"] is None:
            if item["note"]:  # skipped on a large file: say so rather than drop the row
                rows.append(html.Tr([
                    html.Td(item["name"]), html.Td("—", className="number"),
                    html.Td("—", className="number"), html.Td(""),
                    html.Td("✓ consistent" if item["consistent"] else "",
                            className="consistent"),
                    html.Td(f"{item['meaning']} ({item['note']})")],
                    id=f"measure-{key}", className="skipped"))
            continue
        if item["low"] is not None:
            interval = f"{item['low']:.4f} – {item['high']:.4f}"
        else:
            interval = "computing…" if not with_intervals else (item["note"] or "—")
        rows.append(html.Tr([
            html.Td(item["name"]), html.Td(f"{item['value']:.4f}", className="number"),
            html.Td(interval, className="number"),
            html.Td(f"{item['plug_in']:.4f}" if item["plug_in"] != item["value"] else "",
                    className="number plug-in"),
            html.Td("✓ consistent" if item["consistent"] else "", className="consistent"),
            html.Td(item["meaning"] + (f" ({item['note']})" if item["note"] and
                                       item["low"] is not None else "")),
        ], id=f"measure-{key}"))
    weights = f", {result['weights_note']}" if result.get("weighted") else ""
    caption = (f"n = {result['n']:,} rows{weights}. "
               + (f"Estimates: {result['interval']}, {result['n_bootstrap']} resamples"
                  f"{' (' + result['resampling'] + ')' if result.get('resampling') else ''}."
                  if with_intervals else "Intervals are being computed in the background.")
               + " " + (f"Computed on {result['exact_note']}." if result.get("exact_note")
                        else f"Measures {result['sample_note']}." if result.get("sample_note")
                        else ""))
    return html.Div([calibration_test_note(result.get("calibration_test"), with_intervals),
                     html.Table([html.Thead(header), html.Tbody(rows)], className="table"),
                     html.Div(caption, className="caption")])


def calibration_test_note(test: dict[str, Any] | None, with_intervals: bool) -> html.Div:
    """The test of calibration in one line (p-value and verdict), its statistic against
    the calibrated resamples' 95th percentile, and what it tests on demand."""
    if test is None:
        waiting = "computing with the intervals…" if not with_intervals else "not computed."
        return html.Div(f"Calibration test: {waiting}", id=CALIBRATION_TEST,
                        className="note note-info calibration-test")
    detail = (f"{test['statistic_name']} = {test['statistic']:.4f} on {test['n']:,} rows; "
              f"with labels drawn from the probabilities themselves (what a calibrated model "
              f"would give), 95% of the {test['n_resamples']} resamples stay below "
              f"{test['null_quantile']:.4f}. Resamples — {test['resampling']}.")
    others = [html.Div(f"Checked in the {other['view'].replace('_', '-')} view: "
                       f"p = {other['p_value']:.3f} — {other['verdict']}.",
                       className="calibration-test-detail calibration-test-other")
              for other in test.get("other_views", [])]
    if test.get("other_views_note"):
        others.append(html.Div(test["other_views_note"].capitalize() + ".",
                               className="calibration-test-detail"))
    return html.Div([
        html.Strong(test["summary"]),
        *others,
        *cumulative_tests(test.get("cumulative") or []),
        html.Div(detail, className="calibration-test-detail"),
        html.Details([html.Summary("What does it test?"), html.Div(test["description"])],
                     className="calibration-test-detail"),
    ], id=CALIBRATION_TEST,
        className=f"note {'note-warning' if test['rejected'] else 'note-info'} calibration-test")


def cumulative_tests(results: list[dict[str, Any]]) -> list[html.Table | html.Div]:
    """The KS and Kuiper tests beside the test of calibration: one row per view, each
    statistic's value and p-value (nothing when they were not computed)."""
    if not results:
        return []
    views = list(dict.fromkeys(result["view"] for result in results))

    def cell(result: dict[str, Any]) -> html.Td:
        p_value = (f"p ≤ {result['p_value']:.3f}"
                   if result["p_value"] <= 1 / (1 + result["n_resamples"])
                   else f"p = {result['p_value']:.3f}")
        return html.Td(f"{result['statistic']:.4f} ({p_value})",
                       className="number" + (" rejected" if result["rejected"] else ""),
                       title=result["verdict"])

    rows = [html.Tr([html.Td(diagnostics.VIEW_NAMES[view] + " view"),
                     *(cell(result) for key in ("ks", "kuiper") for result in results
                       if result["view"] == view and result["key"] == key)])
            for view in views]
    header = html.Tr([html.Th("beside it: cumulative tests"), html.Th("KS calibration error"),
                      html.Th("Kuiper statistic")])
    return [html.Table([html.Thead(header), html.Tbody(rows)], id=CUMULATIVE_TESTS,
                       className="table cumulative-tests calibration-test-detail"),
            html.Div("KS: the largest gap between the running sums of outcomes and of scores "
                     "over the rows sorted by score, per row (Gupta et al. 2021); Kuiper: its "
                     "largest gaps above and below added. p-values by consistency "
                     f"resampling, {results[0]['n_resamples']} resamples; bold: p ≤ 0.05.",
                     className="calibration-test-detail")]


def _cards(measures: dict[str, Any], summary: dict[str, Any]) -> list[html.Div]:
    n = f"n = {measures['n']:,}"
    rows_note = f"{measures['subset']} rows"
    if measures.get("weighted"):
        n = f"n = {measures['n']:,}, Kish n_eff = {measures['n_eff']:,.0f}"
        rows_note += f", {measures['weights_note']}"
    cards = [measure_card("Rows", measures["n"], rows_note),
             measure_card("Classes", summary["n_classes"], ", ".join(summary["classes"][:6]))]
    for key in _CARDS:
        item = measures["measures"][key]
        interval = (item["low"], item["high"]) if item["low"] is not None else None
        cards.append(measure_card(item["name"], item["value"], n, interval=interval,
                                  title=item["meaning"]))
    return cards


def _note(summary: dict[str, Any], measures: dict[str, Any]) -> html.Div:
    split = (f"{summary['n_calibration']:,} calibration and {summary['n_test']:,} test rows"
             if summary.get("n_test") else "no split column (recalibration uses cross-fitting)")
    view = diagnostics.VIEW_NAMES[measures["view"]]
    external = summary.get("external") or {}
    rows = (f"a seeded sample of {summary['n_rows']:,} of {external['n_rows']:,} rows"
            if external.get("sampled") else rows_caption(summary))
    weights = ""
    if measures.get("weighted"):
        column = (summary.get("roles") or {}).get("weight")
        source = " and ".join(
            [*([f"column {column!r}"] if column else []),
             *([f"1 / {summary['negative_rate']:g} on the negatives"]
               if summary.get("negative_rate") else [])])
        weights = f" Rows weighted by {source}: {measures['weights_note']}."
    return info_note(f"{summary['name']}: {rows}, {split}. Measures on the "
                     f"{view} view, {measures['n_bins']} {measures['binning'].replace('_', '-')}"
                     " bins." + weights + "".join(" " + w for w in summary["warnings"]))
