"""Polling and cancelling a background job from a page: one mechanism for every panel.

A panel has a run button, a job-id store, an interval that polls, a progress bar (and its
wrapper), a status line, a cancel button and a results container. ``register_job_panel``
wires the poll and cancel callbacks; the page keeps its own start callback (its inputs
differ). While a job is queued or running the run button is disabled; when it ends, for
whatever reason, it is enabled again. A job the server was running when it restarted is
``interrupted``: the panel says so and the user runs it again.

While it runs, the status line says the job's message, its percentage, the time so far
and the time left (:func:`running_status`; pages with their own poller use it too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update

from app.jobs import INTERRUPTED_MESSAGE
from app.services.context import Services
from app.services.cost import CostEstimate
from app.ui.components import error_note, info_note, progress_bar

HIDDEN = {"display": "none"}


@dataclass(frozen=True)
class JobPanel:
    """Component ids of one job panel (the wrapper id is ``<progress>-wrapper``)."""

    run: str
    job: str
    poll: str
    progress: str
    status: str
    cancel: str
    results: str

    @property
    def wrapper(self) -> str:
        return f"{self.progress}-wrapper"

    @property
    def cost(self) -> str:
        """The line with the cost estimate of the current settings."""
        return f"{self.run}-cost"


def job_panel_layout(panel: JobPanel, *, run_label: str) -> list[Any]:
    """Run and Cancel buttons, the progress bar, status line, job store, poll interval and
    results container of one panel."""
    return [
        html.Div(id=panel.cost, className="cost-line"),
        html.Div([html.Button(run_label, id=panel.run, className="button"),
                  html.Button("Cancel", id=panel.cancel, disabled=True,
                              className="button button-secondary")], className="job-buttons"),
        progress_bar(panel.progress, panel.wrapper),
        html.Div(id=panel.status),
        dcc.Store(id=panel.job),
        dcc.Interval(id=panel.poll, interval=500, disabled=True),
        html.Div(id=panel.results),
    ]


def start_outputs(panel: JobPanel) -> list[Output]:
    """What a page's start callback sets: the job id, the poll and cancel switches, the
    status line and the results (cleared); see :func:`job_started`, :func:`job_refused`."""
    return [Output(panel.job, "data", allow_duplicate=True), Output(panel.poll, "disabled"),
            Output(panel.cancel, "disabled"),
            Output(panel.status, "children", allow_duplicate=True),
            Output(panel.results, "children", allow_duplicate=True)]


def job_started(job_id: str, message: str) -> tuple[Any, ...]:
    """:func:`start_outputs` of a submitted job: polling, cancellable, results cleared."""
    return job_id, False, False, info_note(message), None


def job_refused(message: str) -> tuple[Any, ...]:
    """:func:`start_outputs` of a request refused before any job: the reason, nothing else."""
    return no_update, True, True, error_note(message), no_update


def job_progress(snapshot: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The bar's width and whether the bar shows (only while the job is queued or running)."""
    running = snapshot["status"] in ("queued", "running")
    return {"width": f"{snapshot['progress']:.0%}"}, ({} if running else HIDDEN)


def time_left(eta_seconds: float | None) -> str:
    """The job's estimated time left in words ("" before there is an estimate)."""
    if eta_seconds is None:
        return ""
    if eta_seconds < 10:
        return "a few seconds left"
    if eta_seconds < 90:
        return f"about {eta_seconds:.0f} s left"
    return f"about {eta_seconds / 60:.0f} min left"


def elapsed(seconds: float | None) -> str:
    """The job's running time in words ("" while queued): it moves on every poll, also
    through a stage that reports no progress of its own."""
    if seconds is None:
        return ""
    if seconds < 90:
        return f"{seconds:.0f} s so far"
    return f"{seconds // 60:.0f} min {seconds % 60:02.0f} s so far"


def estimated(snapshot: dict[str, Any]) -> str:
    """The estimate made before the job started, in words ("" without one), shown until
    the job's own time-left estimate takes over."""
    estimate = snapshot.get("estimate")
    if not estimate or snapshot.get("eta_seconds") is not None:
        return ""
    return f"estimated {estimate['text']} in all"


def running_status(snapshot: dict[str, Any], what: str = "") -> html.Div:
    """Status line of a queued or running job: message, percentage, time so far and left
    (before the time left is known, the estimate made before it started)."""
    parts = [f"{snapshot['message']} — {snapshot['progress']:.0%}",
             elapsed(snapshot.get("elapsed_seconds")), time_left(snapshot.get("eta_seconds")),
             estimated(snapshot)]
    return info_note((f"{what}: " if what else "") + " · ".join(p for p in parts if p))


def cost_note(estimate: CostEstimate | None, problem: str | None = None) -> html.Div | None:
    """The estimate of the chosen settings; over a minute, a warning with a cheaper one."""
    if problem:
        return html.Div(f"No estimate: {problem}", className="card-note")
    if estimate is None:
        return None
    if not estimate.long:
        return html.Div(estimate.words(), className="card-note")
    cheaper = f" Cheaper: {estimate.cheaper}." if estimate.cheaper else ""
    return html.Div(f"This may take more than a minute. {estimate.words()}{cheaper}",
                    className="note note-warning cost-warning", role="status")


def failure_note(what: str, snapshot: dict[str, Any]) -> html.Div:
    """Cancelled, interrupted by a restart of the server, or failed: say so and why."""
    if snapshot["status"] == "cancelled":
        return info_note(f"{what} cancelled; nothing was saved.")
    if snapshot["status"] == "interrupted":
        return html.Div(f"{what}: {INTERRUPTED_MESSAGE}.", className="note note-warning",
                        role="alert")
    if snapshot["status"] == "succeeded":  # done before a restart, result not kept
        return info_note(f"{what}: {snapshot['message']}.")
    message = (snapshot.get("error") or {}).get("message", snapshot["status"])
    return error_note(f"{what} failed: {message}")


def register_job_panel(app: Dash, services: Services, panel: JobPanel, *, what: str,
                       done: Callable[[dict[str, Any]], str],
                       render: Callable[[dict[str, Any]], Any]) -> None:
    """Poll the panel's job (progress, status, results when done) and cancel it on demand.

    Parameters
    ----------
    what : str
        Name of the computation in messages ("HH", "Support").
    done : callable
        Status line for a finished job's result.
    render : callable
        The results' components from a finished job's result.
    """

    @app.callback(Output(panel.progress, "style"), Output(panel.wrapper, "style"),
                  Output(panel.status, "children"),
                  Output(panel.poll, "disabled", allow_duplicate=True),
                  Output(panel.cancel, "disabled", allow_duplicate=True),
                  Output(panel.results, "children", allow_duplicate=True),
                  Output(panel.run, "disabled"),
                  Input(panel.poll, "n_intervals"), State(panel.job, "data"),
                  prevent_initial_call=True)
    def poll(_: int, job_id: str | None) -> tuple[Any, ...]:
        job = services.jobs.get(job_id) if job_id else None
        if job is None:
            return no_update, HIDDEN, no_update, True, True, no_update, False
        snapshot = job.snapshot()
        bar, wrapper = job_progress(snapshot)
        if snapshot["status"] in ("queued", "running"):
            return bar, wrapper, running_status(snapshot), False, False, no_update, True
        result = snapshot["result"]
        if snapshot["status"] != "succeeded" or result is None:
            return bar, wrapper, failure_note(what, snapshot), True, True, no_update, False
        return bar, wrapper, info_note(done(result)), True, True, render(result), False

    @app.callback(Output(panel.status, "children", allow_duplicate=True),
                  Input(panel.cancel, "n_clicks"), State(panel.job, "data"),
                  prevent_initial_call=True)
    def cancel(clicks: int | None, job_id: str | None) -> Any:
        if not clicks or not job_id:
            return no_update
        services.jobs.cancel(job_id)
        return info_note("Cancelling…")
