"""Local page: LCE landscapes, the CDF of the LCE per confidence bin, MLCE curves (Luo et al. 2022).

"Compute" starts the landscape job (:func:`app.services.local.start_landscape`);
when it succeeds the page starts the MLCE-curve job for the same representation
(skipped when that curve is already shown) and polls both with one progress bar.
Moving the gamma slider after a landscape is shown recomputes only the LCE (the
embedding is cached). The map, the CDF and the bin selector are redrawn from the
cached result (:func:`app.services.local.landscape_result`), so the browser holds
only parameters and the figures. Box-selecting or clicking points lists their rows.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update

from app.services import local
from app.services.context import Services
from app.services.datasets import NotFound
from app.ui import ids
from app.ui.components import error_note, info_note, progress_bar
from app.ui.figures import empty_figure
from app.ui.figures.local import landscape_figure, lce_cdf_figure, mlce_curve_figure
from app.ui.job_panel import cost_note, running_status
from app.ui.pages.local_panels import (
    HIDDEN,
    LOCAL_BIN,
    LOCAL_BINS,
    LOCAL_CANCEL,
    LOCAL_CDF,
    LOCAL_COLOUR,
    LOCAL_COMPONENTS,
    LOCAL_COST,
    LOCAL_CURVE,
    LOCAL_CURVES,
    LOCAL_EMBEDDING_COLUMNS,
    LOCAL_EMBEDDING_CONTROL,
    LOCAL_FEATURES,
    LOCAL_GAMMA,
    LOCAL_GAMMA_HINT,
    LOCAL_GAMMA_TEXT,
    LOCAL_JOB,
    LOCAL_MAP,
    LOCAL_POLL,
    LOCAL_PROGRESS,
    LOCAL_REDUCER,
    LOCAL_RESULT,
    LOCAL_RESULTS,
    LOCAL_RUN,
    LOCAL_SAMPLE,
    LOCAL_SELECTION,
    LOCAL_STATUS,
    LOCAL_SUBSET,
    LOCAL_SUMMARY,
    LOCAL_VIEW_NOTE,
    bin_options,
    controls,
    gamma_hint,
    results_panel,
    selection_table,
    summary_panel,
)
from app.ui.shell_helpers import register_folded_note
from calibcore.exceptions import CalibrationInputError
from calibcore.local import DEFAULT_SAMPLE_SIZE

#: Slider default per reducer: 0.2 on 2-D/3-D maps, 0.4 on feature spaces ("none" usually
#: has many dimensions), the bandwidths Luo et al. 2022 use.
_DEFAULT_GAMMA = {"pca": local.DEFAULT_GAMMA_FEATURES, "none": local.DEFAULT_GAMMA_FEATURES,
                  "umap": local.DEFAULT_GAMMA_MAP, "tsne": local.DEFAULT_GAMMA_MAP,
                  "columns": local.DEFAULT_GAMMA_MAP}
_REPRESENTATION = ("features", "reducer", "n_components", "embedding_columns", "sample_size",
                   "random_state", "subset")
# The slider's value is log10(gamma); gamma is shown and used with 2 significant digits.
_GAMMA_TEXT_JS = """
function(value) {
    if (value === null || value === undefined) { return window.dash_clientside.no_update; }
    return "γ = " + Number(Math.pow(10, value).toPrecision(2));
}
"""


def slider_gamma(value: float | None) -> float:
    """The bandwidth a slider position stands for (2 significant digits, as displayed)."""
    return float(f"{10 ** float(value if value is not None else math.log10(0.4)):.2g}")


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Local calibration"),
        html.P("Where is the model miscalibrated? The local calibration error (LCE) of a row "
               "is the kernel-weighted mean of confidence minus correctness over the rows of "
               "its confidence bin, weighted by closeness in a representation φ of the "
               "features (Laplace kernel with bandwidth γ). Small γ looks at individual rows, "
               "large γ recovers the global bin errors (MCE, ECE). The landscape shows the "
               "LCE of every row on a 2-D map; the CDF shows how it spreads within a "
               "confidence bin, which a single |conf − acc| per bin hides (Luo et al., "
               "“Local Calibration: Metrics and Recalibration”). LoRe, the matching "
               "recalibrator, is on the Recalibrate page."),
        html.Div(id=LOCAL_VIEW_NOTE),
        controls(),
        html.Div(id=LOCAL_COST, className="cost-line"),
        html.Div([html.Button("Compute landscape", id=LOCAL_RUN, className="button"),
                  html.Button("Cancel", id=LOCAL_CANCEL, disabled=True,
                              className="button button-secondary")],
                 className="local-buttons"),
        progress_bar(LOCAL_PROGRESS, f"{LOCAL_PROGRESS}-wrapper"),
        html.Div(id=LOCAL_STATUS, role="status"),
        dcc.Store(id=LOCAL_JOB),
        dcc.Store(id=LOCAL_RESULT),
        dcc.Store(id=LOCAL_CURVE),
        dcc.Interval(id=LOCAL_POLL, interval=400, disabled=True),
        results_panel(),
    ])


# -- parameters ----------------------------------------------------------------------------
def _request(features: list[str] | None, reducer: str, components: float | None,
             embedding_columns: list[str] | None, sample: float | None, subset: str,
             gamma: float, n_bins: float | None, random_state: int) -> dict[str, Any]:
    """The page's choices as a JSON-able request (what the stores keep)."""
    problems = []
    if components is None or components < 1 or components != int(components):
        problems.append("Dimensions must be a whole number of at least 1.")
    if n_bins is None or not 1 <= n_bins <= 100 or n_bins != int(n_bins):
        problems.append("Confidence bins must be a whole number from 1 to 100.")
    if sample is None or sample < 10 or sample != int(sample):
        problems.append("The reducer's sample must be a whole number of at least 10 rows.")
    if problems:
        raise CalibrationInputError(" ".join(problems), code="invalid_parameters")
    return {"features": features or None, "reducer": reducer,
            "n_components": int(components or 2),
            "embedding_columns": (embedding_columns or None) if reducer == "columns" else None,
            "sample_size": int(sample or DEFAULT_SAMPLE_SIZE), "random_state": random_state,
            "subset": subset, "gamma": gamma, "n_bins": int(n_bins or 15)}


def _representation(request: dict[str, Any]) -> local.RepresentationParams:
    def as_tuple(values: list[str] | None) -> tuple[str, ...] | None:
        return None if values is None else tuple(values)

    return local.RepresentationParams(
        features=as_tuple(request["features"]), reducer=request["reducer"],
        n_components=request["n_components"],
        embedding_columns=as_tuple(request["embedding_columns"]),
        sample_size=request["sample_size"], random_state=request["random_state"],
        subset=request["subset"])


def _landscape_params(request: dict[str, Any], bin_index: int | None = None,
                      ) -> local.LandscapeParams:
    return local.LandscapeParams(representation=_representation(request),
                                 gamma=request["gamma"], n_bins=request["n_bins"],
                                 bin_index=bin_index)


def _curve_params(request: dict[str, Any]) -> local.CurveParams:
    return local.CurveParams(representation=_representation(request), n_bins=request["n_bins"])


def _curve_key(request: dict[str, Any]) -> dict[str, Any]:
    return {name: request[name] for name in (*_REPRESENTATION, "n_bins", "dataset_id")}


# -- callbacks -----------------------------------------------------------------------------
def register(app: Dash, services: Services) -> None:
    register_folded_note(app, services, LOCAL_VIEW_NOTE,
                         "LCE is defined on the top label (confidence against correctness), "
                         "so read the positive-class ECE on the Overview")
    app.clientside_callback(_GAMMA_TEXT_JS, Output(LOCAL_GAMMA_TEXT, "children"),
                            Input(LOCAL_GAMMA, "drag_value"))

    @app.callback(Output(LOCAL_FEATURES, "options"), Output(LOCAL_FEATURES, "value"),
                  Output(LOCAL_EMBEDDING_COLUMNS, "options"),
                  Output(LOCAL_EMBEDDING_COLUMNS, "value"),
                  Output(LOCAL_STATUS, "children"), Output(LOCAL_RESULTS, "style"),
                  Output(LOCAL_RESULT, "data"), Output(LOCAL_CURVE, "data"),
                  Output(LOCAL_JOB, "data"), Input(ids.DATASET_PICKER, "value"))
    async def choose_dataset(dataset_id: str | None) -> tuple[Any, ...]:
        if not dataset_id:
            return [], [], [], [], info_note("Choose or upload a dataset."), HIDDEN, \
                None, None, None
        try:
            summary = await asyncio.to_thread(services.datasets.summary, dataset_id)
        except NotFound as exc:
            return [], [], [], [], error_note(str(exc)), HIDDEN, None, None, None
        kinds = summary.get("feature_kinds", {})
        features = [{"label": f"{name} ({kinds.get(name, '')})", "value": name}
                    for name in summary["roles"]["features"]]
        numeric = [option for option in features if kinds.get(option["value"]) == "numeric"]
        hint = info_note(f"{summary['n_rows']:,} rows. Choose a representation and press "
                         "“Compute landscape”.")
        return features, [], numeric, [], hint, HIDDEN, None, None, None

    # gamma is the user's: changing the representation keeps it (an MLCE that moved with a
    # silently changed gamma could not be compared); the hint names the reducer's default
    @app.callback(Output(LOCAL_GAMMA_HINT, "children"),
                  Output(LOCAL_EMBEDDING_CONTROL, "style"),
                  Output(LOCAL_COMPONENTS, "value"),
                  Input(LOCAL_REDUCER, "value"), State(LOCAL_COMPONENTS, "value"),
                  prevent_initial_call=True)
    def choose_reducer(reducer: str, components: float | None) -> tuple[Any, ...]:
        default = _DEFAULT_GAMMA.get(reducer, local.DEFAULT_GAMMA_MAP)
        shown = {} if reducer == "columns" else HIDDEN
        if reducer in ("tsne", "umap") and components not in (2, 3):
            components = 2
        return gamma_hint(default), shown, components

    @app.callback(Output(LOCAL_COST, "children"), Input(ids.DATASET_PICKER, "value"),
                  Input(LOCAL_FEATURES, "value"), Input(LOCAL_REDUCER, "value"),
                  Input(LOCAL_COMPONENTS, "value"),
                  Input(LOCAL_EMBEDDING_COLUMNS, "value"), Input(LOCAL_SAMPLE, "value"),
                  Input(LOCAL_SUBSET, "value"), State(LOCAL_BINS, "value"))
    async def estimate(dataset_id: str | None, features: list[str] | None, reducer: str,
                       components: float | None, embedding_columns: list[str] | None,
                       sample: float | None, subset: str, n_bins: float | None) -> Any:
        if not dataset_id:
            return None
        try:
            request = _request(features, reducer, components, embedding_columns, sample,
                               subset, local.DEFAULT_GAMMA_FEATURES, n_bins,
                               services.settings.random_state)
            cost = await asyncio.to_thread(local.estimate_landscape, services, dataset_id,
                                           _representation(request))
        except (CalibrationInputError, NotFound) as exc:
            return cost_note(None, str(exc))
        return cost_note(cost)

    _register_jobs(app, services)
    _register_views(app, services)


def _register_jobs(app: Dash, services: Services) -> None:
    @app.callback(Output(LOCAL_JOB, "data", allow_duplicate=True),
                  Output(LOCAL_POLL, "disabled"), Output(LOCAL_CANCEL, "disabled"),
                  Output(LOCAL_STATUS, "children", allow_duplicate=True),
                  Output(LOCAL_PROGRESS, "style", allow_duplicate=True),
                  Output(f"{LOCAL_PROGRESS}-wrapper", "style", allow_duplicate=True),
                  Input(LOCAL_RUN, "n_clicks"), Input(LOCAL_GAMMA, "value"),
                  State(ids.DATASET_PICKER, "value"), State(LOCAL_FEATURES, "value"),
                  State(LOCAL_REDUCER, "value"), State(LOCAL_COMPONENTS, "value"),
                  State(LOCAL_EMBEDDING_COLUMNS, "value"), State(LOCAL_SAMPLE, "value"),
                  State(LOCAL_SUBSET, "value"), State(LOCAL_BINS, "value"),
                  State(LOCAL_RESULT, "data"), State(LOCAL_JOB, "data"),
                  prevent_initial_call=True)
    async def start(clicks: int | None, gamma_position: float | None, dataset_id: str | None,
                    features: list[str] | None, reducer: str, components: float | None,
                    embedding_columns: list[str] | None, sample: float | None, subset: str,
                    n_bins: float | None, shown: dict[str, Any] | None,
                    running: dict[str, Any] | None) -> tuple[Any, ...]:
        by_slider = ctx.triggered_id == LOCAL_GAMMA
        if not dataset_id:
            return no_update, True, True, error_note("Choose a dataset first."), \
                no_update, no_update
        try:
            request = {**_request(features, reducer, components, embedding_columns, sample,
                                  subset, slider_gamma(gamma_position), n_bins,
                                  services.settings.random_state), "dataset_id": dataset_id}
        except CalibrationInputError as exc:
            if by_slider:
                return (no_update,) * 6
            return no_update, True, True, error_note(exc.message), no_update, no_update
        if by_slider and not _only_gamma_changed(shown, request):
            return (no_update,) * 6
        if running and running.get("status") == "running":  # superseded by this request
            for job_id in (running.get("landscape"), running.get("curve")):
                if job_id:
                    services.jobs.cancel(job_id)
        try:
            job = await asyncio.to_thread(local.start_landscape, services, dataset_id,
                                          _landscape_params(request))
        except (CalibrationInputError, NotFound) as exc:
            return None, True, True, error_note(str(exc)), no_update, no_update
        state = {"landscape": job.id, "curve": None, "request": request, "status": "running",
                 "shown": False}
        return state, False, False, info_note("Computing the landscape…"), {"width": "0%"}, {}

    @app.callback(Output(LOCAL_PROGRESS, "style"),
                  Output(f"{LOCAL_PROGRESS}-wrapper", "style"),
                  Output(LOCAL_STATUS, "children", allow_duplicate=True),
                  Output(LOCAL_POLL, "disabled", allow_duplicate=True),
                  Output(LOCAL_CANCEL, "disabled", allow_duplicate=True),
                  Output(LOCAL_JOB, "data", allow_duplicate=True),
                  Output(LOCAL_RESULT, "data", allow_duplicate=True),
                  Output(LOCAL_CURVE, "data", allow_duplicate=True),
                  Output(LOCAL_SUMMARY, "children"),
                  Output(LOCAL_BIN, "options"), Output(LOCAL_BIN, "value"),
                  Output(LOCAL_RESULTS, "style", allow_duplicate=True),
                  Input(LOCAL_POLL, "n_intervals"), State(LOCAL_JOB, "data"),
                  State(LOCAL_CURVE, "data"), State(LOCAL_BIN, "value"),
                  prevent_initial_call=True)
    async def poll(_: int, state: dict[str, Any] | None,
                   curve: dict[str, Any] | None, bin_value: str | None) -> list[Any]:
        outputs: list[Any] = [no_update] * 12
        if not state:
            outputs[1], outputs[3], outputs[4] = HIDDEN, True, True
            return outputs
        landscape = services.jobs.get(state["landscape"])
        if landscape is None:
            outputs[1:5] = [HIDDEN, error_note("The job is no longer known to the server "
                                                "(restarted?); compute again."), True, True]
            return outputs
        snapshot = landscape.snapshot()
        if not state["shown"]:
            if snapshot["status"] in ("queued", "running"):
                return _progress(outputs, snapshot, "Landscape")
            if snapshot["status"] != "succeeded":
                return _stopped(outputs, snapshot, "The landscape", state)
            return await _show_landscape(services, outputs, state, snapshot["result"], curve,
                                         bin_value)
        job = services.jobs.get(state["curve"]) if state["curve"] else None
        if job is None:
            outputs[1:5] = [HIDDEN, no_update, True, True]
            return outputs
        snapshot = job.snapshot()
        if snapshot["status"] in ("queued", "running"):
            return _progress(outputs, snapshot, "MLCE curve")
        if snapshot["status"] != "succeeded":
            return _stopped(outputs, snapshot, "The MLCE curve", state)
        outputs[0:6] = [{"width": "100%"}, HIDDEN, info_note(_done(state)), True, True,
                        {**state, "status": "done"}]
        outputs[7] = {"key": _curve_key(state["request"]), "result": snapshot["result"]}
        return outputs

    @app.callback(Output(LOCAL_STATUS, "children", allow_duplicate=True),
                  Input(LOCAL_CANCEL, "n_clicks"), State(LOCAL_JOB, "data"),
                  prevent_initial_call=True)
    def cancel(clicks: int | None, state: dict[str, Any] | None) -> Any:
        if not clicks or not state:
            return no_update
        for job_id in (state.get("landscape"), state.get("curve")):
            if job_id:
                services.jobs.cancel(job_id)
        return info_note("Cancelling…")


def _only_gamma_changed(shown: dict[str, Any] | None, request: dict[str, Any]) -> bool:
    """Whether a landscape is shown that differs from ``request`` in gamma only."""
    if not shown:
        return False
    before = shown["request"]
    same = all(before.get(k) == request.get(k) for k in request if k != "gamma")
    return same and before["gamma"] != request["gamma"]


def _progress(outputs: list[Any], snapshot: dict[str, Any], what: str) -> list[Any]:
    outputs[0] = {"width": f"{snapshot['progress']:.0%}"}
    outputs[1] = {}
    outputs[2] = running_status(snapshot, what)
    outputs[3], outputs[4] = False, False
    return outputs


def _stopped(outputs: list[Any], snapshot: dict[str, Any], what: str,
             state: dict[str, Any]) -> list[Any]:
    if snapshot["status"] == "cancelled":
        note = info_note(f"{what} was cancelled.")
    else:
        note = error_note(f"{what} failed: {(snapshot['error'] or {}).get('message', '')}")
    outputs[1:6] = [HIDDEN, note, True, True, {**state, "status": snapshot["status"]}]
    return outputs


async def _show_landscape(services: Services, outputs: list[Any], state: dict[str, Any],
                          result: dict[str, Any], curve: dict[str, Any] | None,
                          bin_value: str | None) -> list[Any]:
    """The landscape is ready: show it, then start the MLCE curve unless it is shown."""
    request = state["request"]
    shown = {"request": request, "gamma": result["params"]["gamma"], "mlce": result["mlce"],
             "mean_lce": result["mean_lce"]}
    options = bin_options(result)
    keep = bin_value if bin_value in {o["value"] for o in options} else "all"
    outputs[6], outputs[8], outputs[9], outputs[10], outputs[11] = (
        shown, summary_panel(result), options, keep, {})
    if curve and curve.get("key") == _curve_key(request):
        outputs[0:6] = [{"width": "100%"}, HIDDEN, info_note(_done(state)), True, True,
                        {**state, "shown": True, "status": "done"}]
        return outputs
    try:
        job = await asyncio.to_thread(local.start_curve, services, request["dataset_id"],
                                      _curve_params(request))
    except (CalibrationInputError, NotFound) as exc:
        outputs[0:6] = [no_update, HIDDEN, error_note(str(exc)), True, True,
                        {**state, "shown": True, "status": "failed"}]
        return outputs
    outputs[0:6] = [{"width": "0%"}, {}, info_note("Landscape ready; computing the MLCE "
                                                   "curve…"), False, False,
                    {**state, "shown": True, "curve": job.id}]
    return outputs


def _done(state: dict[str, Any]) -> str:
    request = state["request"]
    return (f"Landscape at γ = {request['gamma']:g} and the MLCE curve are ready. The LCE is "
            "saved as the per-row columns “lce” and “lce_signed” for downloads (Recalibrate "
            "page). Move the γ slider to recompute at another bandwidth.")


def _register_views(app: Dash, services: Services) -> None:
    @app.callback(Output(LOCAL_MAP, "figure"), Output(LOCAL_CDF, "figure"),
                  Input(LOCAL_RESULT, "data"), Input(LOCAL_BIN, "value"),
                  Input(LOCAL_COLOUR, "value"), prevent_initial_call=True)
    async def draw(shown: dict[str, Any] | None, bin_value: str | None,
                   colour: str) -> tuple[Any, Any]:
        if not shown:
            return no_update, no_update
        request = shown["request"]
        bin_index = None if bin_value in (None, "all") else int(bin_value)
        try:
            result = await asyncio.to_thread(local.landscape_result, services,
                                             request["dataset_id"],
                                             _landscape_params(request, bin_index))
        except (CalibrationInputError, NotFound) as exc:
            message = empty_figure(str(exc)[:90])
            return message, message
        return (landscape_figure(result, "signed" if colour == "signed" else "lce"),
                lce_cdf_figure(result, bin_index))

    @app.callback(Output(LOCAL_CURVES, "figure"), Input(LOCAL_CURVE, "data"),
                  Input(LOCAL_RESULT, "data"), prevent_initial_call=True)
    def draw_curve(curve: dict[str, Any] | None, shown: dict[str, Any] | None) -> Any:
        if not curve:
            return empty_figure("The MLCE curve follows the landscape.")
        current = None
        if shown and curve["key"] == _curve_key(shown["request"]):
            current = {key: shown[key] for key in ("gamma", "mlce", "mean_lce")}
        return mlce_curve_figure(curve["result"], current)

    @app.callback(Output(LOCAL_SELECTION, "children"),
                  Input(LOCAL_MAP, "selectedData"), Input(LOCAL_MAP, "clickData"),
                  prevent_initial_call=True)
    def select(selected: dict[str, Any] | None, clicked: dict[str, Any] | None) -> Any:
        triggered = ctx.triggered[0]["prop_id"] if ctx.triggered else ""
        return selection_table(clicked if triggered.endswith("clickData") else selected)


