"""Heterogeneity page: hidden heterogeneity (HH) and calibration support
(Wagstaff & Dietterich 2023).

Both computations run as jobs (:mod:`app.services.heterogeneity`,
:mod:`app.services.support`); the page starts them, polls their progress, can
cancel them, and draws their results: the HH map and HH against confidence with
the local-vs-global recommendation; the support histogram (against a batch
dataset when one is chosen) with the shift test and the lowest-support rows.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dash import Dash, Input, Output, State, dcc, html

from app.services.context import Services
from app.services.datasets import NotFound
from app.services.heterogeneity import (
    DEFAULT_SAMPLE,
    MAX_CALIBRATION_ROWS,
    HeterogeneityParams,
    estimate_heterogeneity,
    start_heterogeneity,
)
from app.services.support import SupportParams, estimate_support, start_support
from app.ui import ids
from app.ui.components import error_note, info_note, measure_card, weights_note
from app.ui.figures.heterogeneity import (
    hh_confidence_figure,
    hh_map_figure,
    support_histogram_figure,
)
from app.ui.job_panel import (
    JobPanel,
    cost_note,
    job_panel_layout,
    job_refused,
    job_started,
    register_job_panel,
    start_outputs,
)
from calibcore.exceptions import CalibrationInputError

#: Component ids of this page (the shared ones are in app.ui.ids).
HH_RADIUS = "hh-radius"
HH_SAMPLE = "hh-sample"
HH_ALL_ROWS = "hh-all-rows"
HH_SEED = "hh-seed"
HH_CALIBRATION = "hh-calibration-sample"
HH_FEATURES = "hh-features"
HH_RUN = "hh-run"
HH_CANCEL = "hh-cancel"
HH_JOB = "hh-job"
HH_POLL = "hh-poll"
HH_PROGRESS = "hh-progress"
HH_STATUS = "hh-status"
HH_RESULTS = "hh-results"
HH_CARDS = "hh-cards"
HH_MAP_GRAPH = "hh-map-graph"
HH_CONFIDENCE_GRAPH = "hh-confidence-graph"
SUPPORT_BATCH = "support-batch"
SUPPORT_RUN = "support-run"
SUPPORT_CANCEL = "support-cancel"
SUPPORT_JOB = "support-job"
SUPPORT_POLL = "support-poll"
SUPPORT_PROGRESS = "support-progress"
SUPPORT_STATUS = "support-status"
SUPPORT_RESULTS = "support-results"
SUPPORT_SHIFT = "support-shift"
SUPPORT_HISTOGRAM = "support-histogram"
SUPPORT_TABLE = "support-table"

HH_PANEL = JobPanel(run=HH_RUN, job=HH_JOB, poll=HH_POLL, progress=HH_PROGRESS,
                    status=HH_STATUS, cancel=HH_CANCEL, results=HH_RESULTS)
SUPPORT_PANEL = JobPanel(run=SUPPORT_RUN, job=SUPPORT_JOB, poll=SUPPORT_POLL,
                         progress=SUPPORT_PROGRESS, status=SUPPORT_STATUS,
                         cancel=SUPPORT_CANCEL, results=SUPPORT_RESULTS)

def _number(label: str, component_id: str, value: float, **limits: Any) -> html.Div:
    return html.Div([html.Label(label, className="field-label", htmlFor=component_id),
                     dcc.Input(id=component_id, type="number", value=value, debounce=True,
                               className="text-input", **limits)], className="control")


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Hidden heterogeneity and calibration support"),
        html.P("Hidden heterogeneity (HH) measures how much the outcome varies among rows "
               "with the same predicted probabilities: for each test row, a small forest on "
               "the features of the calibration rows within Hellinger distance r of its "
               "prediction; HH is how much it lowers their Brier score. High HH with enough "
               "calibration data favours a local, similarity-based recalibrator (SWC, SWC-HH) "
               "over a global one. Calibration support counts the calibration rows that "
               "resemble a row; low support, or a batch whose support differs, warns that "
               "the calibration set does not represent it (Wagstaff & Dietterich)."),
        html.H2("Hidden heterogeneity"),
        html.Div([
            _number("Hellinger radius r", HH_RADIUS, 0.1, min=0.01, max=1, step=0.01),
            html.Div([html.Label("Test rows to evaluate (seeded sample)",
                                 className="field-label", htmlFor=HH_SAMPLE),
                      dcc.Input(id=HH_SAMPLE, type="number", value=DEFAULT_SAMPLE, min=1,
                                step=1, debounce=True, className="text-input"),
                      dcc.Checklist(id=HH_ALL_ROWS, className="checklist",
                                    options=[{"label": "all test rows (the default up to "
                                                       f"{ALL_ROWS_DEFAULT_MAX:,}; with "
                                                       "two classes up to "
                                                       f"{BINARY_ALL_ROWS_DEFAULT_MAX:,})",
                                              "value": "all"}], value=[])],
                     className="control"),
            _number("Random seed", HH_SEED, 0, min=0, step=1),
            html.Div([html.Label("Calibration rows for the forests (seeded sample)",
                                 className="field-label", htmlFor=HH_CALIBRATION),
                      dcc.Input(id=HH_CALIBRATION, type="number",
                                value=MAX_CALIBRATION_ROWS, min=1, step=1, debounce=True,
                                placeholder="all", className="text-input"),
                      html.Div("empty: every calibration row (slower on large files)",
                               className="card-note")],
                     className="control"),
            html.Div([html.Label("Feature columns", className="field-label",
                                 htmlFor=HH_FEATURES),
                      dcc.Dropdown(id=HH_FEATURES, multi=True,
                                   placeholder="all feature columns")],
                     className="control control-wide"),
        ], className="controls"),
        *job_panel_layout(HH_PANEL, run_label="Compute HH"),
        html.H2("Calibration support"),
        html.Div([
            html.Div([html.Label("Compare a batch (another stored dataset with the same "
                                 "feature columns)", className="field-label",
                                 htmlFor=SUPPORT_BATCH),
                      dcc.Dropdown(id=SUPPORT_BATCH, placeholder="no batch: calibration "
                                   "and test rows only"),
                      html.Div(["Upload a batch on the ", dcc.Link("Data page", href="/"),
                                " first; labels are optional (tick 'no labels')."],
                               className="card-note")],
                     className="control control-wide"),
        ], className="controls"),
        *job_panel_layout(SUPPORT_PANEL, run_label="Compute support"),
    ])


#: Up to this many test rows, the page evaluates every row by default (default_nb's
#: 3,474 take about 12 s on two cores; benchmarks/bench_path.py); with two classes it
#: does up to BINARY_ALL_ROWS_DEFAULT_MAX (forests shared: all 150,000 test rows of a
#: 300k-row file took 52 s, but the map of that many rows is 16 MB for the browser).
ALL_ROWS_DEFAULT_MAX = 4_000
BINARY_ALL_ROWS_DEFAULT_MAX = 50_000


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(HH_FEATURES, "options"), Output(HH_FEATURES, "value"),
                  Output(SUPPORT_BATCH, "options"), Output(SUPPORT_BATCH, "value"),
                  Output(HH_RESULTS, "children"), Output(SUPPORT_RESULTS, "children"),
                  Output(HH_JOB, "data"), Output(SUPPORT_JOB, "data"),
                  Output(HH_ALL_ROWS, "value"),
                  Input(ids.DATASET_PICKER, "value"))
    async def choose_dataset(dataset_id: str | None) -> tuple[Any, ...]:
        if not dataset_id:
            note = info_note("Choose or upload a dataset.")
            return [], [], [], None, note, None, None, None, []
        try:
            summary, listed = await asyncio.to_thread(_dataset_choices, services, dataset_id)
        except NotFound as exc:
            return [], [], [], None, error_note(str(exc)), None, None, None, []
        features = [{"label": f"{name} ({summary['feature_kinds'].get(name, '')})",
                     "value": name} for name in summary["roles"]["features"]]
        batches = [{"label": f"{d['name']} ({d['n_rows']:,} rows)", "value": d["id"]}
                   for d in reversed(listed) if d["id"] != dataset_id]
        split = summary.get("n_test") is not None
        # without a split column HH evaluates a seeded half of the rows against the other
        n_test = summary["n_test"] if split else summary["n_rows"] - summary["n_rows"] // 2
        binary = len(summary["classes"]) == 2 and n_test <= BINARY_ALL_ROWS_DEFAULT_MAX
        every_row = n_test <= ALL_ROWS_DEFAULT_MAX or binary
        rows_note = ("" if split else
                     f" No split column: HH evaluates a seeded half of the {summary['n_rows']:,} "
                     "rows (the “test rows” here) against the other half, while calibration "
                     "support below uses every row, cross-fitted over 5 folds, so the two "
                     "sections count different rows.")
        # how long it takes is the cost line's (it follows the settings)
        hint = info_note((
            f"Press “Compute HH” to evaluate all {n_test:,} test rows."
            if n_test <= ALL_ROWS_DEFAULT_MAX else
            f"Press “Compute HH” to evaluate all {n_test:,} test rows: with two classes, rows "
            "whose probabilities round to the same point share a forest." if binary else
            f"Press “Compute HH” to evaluate a seeded sample of {DEFAULT_SAMPLE} of the "
            f"{n_test:,} test rows: HH fits a forest per distinct neighbourhood, so every "
            "row of a file this size would take long.") + rows_note)
        return features, [], batches, None, hint, None, None, None, ["all"] if every_row else []

    _register_hh(app, services)
    _register_support(app, services)


def _dataset_choices(services: Services,
                     dataset_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return services.datasets.summary(dataset_id), services.datasets.list()


def _register_hh(app: Dash, services: Services) -> None:
    @app.callback(*start_outputs(HH_PANEL), Input(HH_RUN, "n_clicks"),
                  State(ids.DATASET_PICKER, "value"),
                  State(HH_RADIUS, "value"), State(HH_SAMPLE, "value"),
                  State(HH_ALL_ROWS, "value"), State(HH_SEED, "value"),
                  State(HH_FEATURES, "value"), State(HH_CALIBRATION, "value"),
                  prevent_initial_call=True)
    async def start(clicks: int | None, dataset_id: str | None, radius: float | None,
                    sample: float | None, all_rows: list[str] | None, seed: float | None,
                    features: list[str] | None, calibration: float | None) -> tuple[Any, ...]:
        if not clicks or not dataset_id:
            return job_refused("Choose a dataset first.")
        problem = _hh_problem(radius, sample, bool(all_rows), seed, calibration)
        if problem:
            return job_refused(problem)
        params = HeterogeneityParams(
            radius=float(radius or 0.1), sample=None if all_rows else int(sample or 0),
            random_state=int(seed or 0), features=tuple(features) if features else None,
            calibration_sample=None if calibration is None else int(calibration))
        try:
            job = await asyncio.to_thread(start_heterogeneity, services, dataset_id, params)
        except (CalibrationInputError, NotFound) as exc:
            return job_refused(str(exc))
        return job_started(job.id, "Computing hidden heterogeneity…")

    register_job_panel(app, services, HH_PANEL, what="HH", done=_hh_done, render=_hh_results)

    @app.callback(Output(HH_PANEL.cost, "children"), Input(ids.DATASET_PICKER, "value"),
                  Input(HH_RADIUS, "value"), Input(HH_SAMPLE, "value"),
                  Input(HH_ALL_ROWS, "value"), Input(HH_SEED, "value"),
                  Input(HH_FEATURES, "value"), Input(HH_CALIBRATION, "value"))
    async def estimate(dataset_id: str | None, radius: float | None, sample: float | None,
                       all_rows: list[str] | None, seed: float | None,
                       features: list[str] | None, calibration: float | None) -> Any:
        problem = _hh_problem(radius, sample, bool(all_rows), seed, calibration)
        if not dataset_id or problem:
            return cost_note(None, problem)
        params = HeterogeneityParams(
            radius=float(radius or 0.1), sample=None if all_rows else int(sample or 0),
            random_state=int(seed or 0), features=tuple(features) if features else None,
            calibration_sample=None if calibration is None else int(calibration))
        try:
            cost = await asyncio.to_thread(estimate_heterogeneity, services, dataset_id, params)
        except (CalibrationInputError, NotFound) as exc:
            return cost_note(None, str(exc))
        return cost_note(cost)

    @app.callback(Output(HH_SAMPLE, "disabled"), Input(HH_ALL_ROWS, "value"))
    def grey_out_sample(all_rows: list[str] | None) -> bool:
        return bool(all_rows)


def _register_support(app: Dash, services: Services) -> None:
    @app.callback(*start_outputs(SUPPORT_PANEL), Input(SUPPORT_RUN, "n_clicks"),
                  State(ids.DATASET_PICKER, "value"),
                  State(SUPPORT_BATCH, "value"), State(HH_FEATURES, "value"),
                  prevent_initial_call=True)
    async def start(clicks: int | None, dataset_id: str | None, batch_id: str | None,
                    features: list[str] | None) -> tuple[Any, ...]:
        if not clicks or not dataset_id:
            return job_refused("Choose a dataset first.")
        params = SupportParams(batch_dataset_id=batch_id or None,
                               random_state=services.settings.random_state,
                               features=tuple(features) if features else None)
        try:
            job = await asyncio.to_thread(start_support, services, dataset_id, params)
        except (CalibrationInputError, NotFound) as exc:
            return job_refused(str(exc))
        return job_started(job.id, "Computing calibration support…")

    register_job_panel(app, services, SUPPORT_PANEL, what="Support", done=_support_done,
                       render=_support_results)

    @app.callback(Output(SUPPORT_PANEL.cost, "children"), Input(ids.DATASET_PICKER, "value"),
                  Input(SUPPORT_BATCH, "value"), Input(HH_FEATURES, "value"))
    async def estimate(dataset_id: str | None, batch_id: str | None,
                       features: list[str] | None) -> Any:
        if not dataset_id:
            return None
        params = SupportParams(batch_dataset_id=batch_id or None,
                               random_state=services.settings.random_state,
                               features=tuple(features) if features else None)
        try:
            cost = await asyncio.to_thread(estimate_support, services, dataset_id, params)
        except (CalibrationInputError, NotFound) as exc:
            return cost_note(None, str(exc))
        return cost_note(cost)


def _hh_problem(radius: float | None, sample: float | None, all_rows: bool,
                seed: float | None, calibration: float | None) -> str | None:
    if radius is None or not 0 < radius <= 1:
        return "The Hellinger radius must be in (0, 1]."
    if not all_rows and (sample is None or sample < 1 or sample != int(sample)):
        return "The number of test rows must be a whole number of at least 1 (or tick 'all')."
    if seed is None or seed < 0 or seed != int(seed):
        return "The random seed must be a whole number of at least 0."
    if calibration is not None and (calibration < 1 or calibration != int(calibration)):
        return ("The number of calibration rows must be a whole number of at least 1 "
                "(or empty for every row).")
    return None


def _hh_done(result: dict[str, Any]) -> str:
    return (f"HH of {result['n_evaluated']:,} test rows against "
            f"{_calibration_rows(result)} calibration rows (radius {result['params']['radius']:g}; "
            f"{result['n_forests']:,} local forests). Saved as the per-row column “hh”.")


def _calibration_rows(result: dict[str, Any]) -> str:
    used, total = result.get("n_calibration_used", result["n_calibration"]), result["n_calibration"]
    return f"{used:,}" if used == total else f"{used:,} of {total:,}"


def _hh_results(result: dict[str, Any]) -> html.Div:
    rows = n = f"n = {result['n_evaluated']:,} test rows"
    if result.get("weighted"):  # the weighted summaries; neighbour counts count rows
        n += f" (Kish n_eff = {result['n_eff']:,.0f})"
    cards = html.Div([
        measure_card("Mean HH", result["mean_hh"], n,
                     title="mean hidden heterogeneity (Brier, summed over classes)"),
        measure_card("Median HH", result["median_hh"], n),
        measure_card("Rows with HH > 0", f"{result['share_positive']:.1%}", n),
        measure_card("Calibration rows", _calibration_rows(result), "neighbourhood pool"),
        measure_card("Median neighbours", int(result["median_neighbours"]), rows,
                     title="calibration rows within the Hellinger radius of a test row"),
        measure_card("Neighbourhoods", result["n_neighbourhoods"],
                     f"{result['n_forests']:,} with a local forest",
                     title="distinct neighbour sets (rows sharing one share their HH)"),
    ], className="cards", id=HH_CARDS)
    warning = html.Div(result["warning"], className="note note-warning") \
        if result.get("warning") else None
    return html.Div([
        weights_note(result),
        cards,
        warning,
        _recommendation(result["recommendation"]),
        html.Div([
            dcc.Graph(id=HH_MAP_GRAPH, figure=hh_map_figure(result),
                      config={"displaylogo": False}),
            dcc.Graph(id=HH_CONFIDENCE_GRAPH, figure=hh_confidence_figure(result),
                      config={"displaylogo": False}),
        ], className="hh-graphs"),
        _notes(result["notes"]),
    ])


def _recommendation(advice: dict[str, Any]) -> html.Div:
    headline = _HEADLINES[advice["recommend"]]
    if advice.get("basis") == "held_out":
        headline = f"On held-out rows, {advice['best']['name']} does best: {headline}"
    else:
        headline = headline[0].upper() + headline[1:]
    numbers = html.Ul([
        html.Li(f"mean HH {advice['mean_hh']:.4f} over {advice['n_rows']:,} rows "
                f"(local needs > {advice['hh_threshold']:g})"),
        html.Li(f"{advice['n_calibration']:,} calibration rows (local needs ≥ "
                f"{advice['min_calibration_rows']:,})"),
        *[html.Li(f"held-out NLL of {entry['name']}: {entry['nll']:.4f}")
          for entry in advice.get("held_out", [])],
    ])
    basis = advice.get("basis_note")
    return html.Div([html.Div("Recommendation", className="card-label"),
                     html.Div(headline, className="hh-headline"),
                     html.Div(basis, className="card-note hh-basis") if basis else None,
                     html.Div(advice["reason"], className="card-note"), numbers],
                    className=f"card hh-recommendation hh-{advice['recommend']}",
                    id="hh-recommendation")


_HEADLINES = {
    "local": "local calibration is likely to help: try SWC or SWC-HH on the Recalibrate page.",
    "global": "a global recalibrator is likely enough (temperature, Platt, beta, isotonic…).",
    "none": "keep the original probabilities, or try other recalibrators.",
}


def _notes(notes: list[str]) -> html.Details:
    return html.Details([html.Summary("What was done"),
                         html.Ul([html.Li(note) for note in notes])], className="hh-notes")


def _support_done(result: dict[str, Any]) -> str:
    return (f"Support of {result['n_calibration']:,} calibration rows (cross-fitted, "
            f"{result['n_folds']} folds) and {result['n_test']:,} test rows. Saved as the "
            "per-row column “support”.")


def _shift_note(title: str, shift: dict[str, Any]) -> html.Div:
    text = f"{title} ({shift['test']} test on support): {shift['message']}"
    if shift["shifted"]:
        return html.Div(text, className="note note-warning", role="alert")
    return info_note(text)


def _support_results(result: dict[str, Any]) -> html.Div:
    shifts = []
    if result.get("test_shift"):
        shifts.append(_shift_note("Test rows vs calibration rows", result["test_shift"]))
    batch = result.get("batch")
    if batch:
        shifts.append(_shift_note(f"Batch “{batch['name']}” ({batch['n_rows']:,} rows) vs "
                                  "calibration rows", batch["shift"]))
    tables = [html.H3("Lowest-support rows"), _lowest_table(result["lowest"], SUPPORT_TABLE)]
    if batch:
        tables += [html.H3("Lowest-support batch rows"),
                   _lowest_table(batch["lowest"], "support-batch-table")]
    return html.Div([
        weights_note(result),
        html.Div(shifts, id=SUPPORT_SHIFT),
        dcc.Graph(id=SUPPORT_HISTOGRAM, figure=support_histogram_figure(result),
                  config={"displaylogo": False}),
        *tables,
        _notes([f"Rows: {result['scheme']}.", *result["notes"]]),
    ])


def _lowest_table(rows: list[dict[str, Any]], table_id: str) -> html.Table:
    header = html.Tr([html.Th(h) for h in ("rows", "row", "id", "label", "prediction",
                                           "support")])
    body = [html.Tr([html.Td(row["set"]), html.Td(f"{row['row']:,}"),
                     html.Td("—" if row["id"] is None else str(row["id"])),
                     html.Td(row["label"]),
                     html.Td(f"{row['predicted']} ({row['confidence']:.3f})"),
                     html.Td(f"{row['support']:.2f}")]) for row in rows]
    return html.Table([html.Thead(header), html.Tbody(body)], className="table", id=table_id)
