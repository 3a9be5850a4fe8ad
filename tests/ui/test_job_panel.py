"""The shared job panel's poll callback, called directly (no browser): what each job state
shows, and that the run button is disabled only while a job is queued or running."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from dash import Dash

from app.jobs import INTERRUPTED_MESSAGE, Progress
from app.services.context import Services
from app.ui.job_panel import HIDDEN, JobPanel, register_job_panel

PANEL = JobPanel(run="t-run", job="t-job", poll="t-poll", progress="t-progress",
                 status="t-status", cancel="t-cancel", results="t-results")


@pytest.fixture
def services(settings_factory) -> Iterator[Services]:  # type: ignore[no-untyped-def]
    built = Services.build(settings_factory())
    yield built
    built.jobs.shutdown()


def poll_callback(services: Services) -> Any:
    app = Dash(__name__)
    register_job_panel(app, services, PANEL, what="HH", done=lambda result: "HH done",
                       render=lambda result: f"rendered {result['value']}")
    [key] = [key for key in app.callback_map if f"{PANEL.run}.disabled" in key]
    return app.callback_map[key]["callback"].__wrapped__


def text(component: Any) -> str:
    return str(component.children)


def test_an_interrupted_job_says_so_and_the_run_button_comes_back(
        services, settings_factory) -> None:
    started, release = threading.Event(), threading.Event()

    def work(progress: Progress) -> None:
        progress.update(0.3, "local forests")
        started.set()
        release.wait()  # writes no more progress, as a killed server's job would not

    job = services.jobs.submit("heterogeneity", work)
    poll = poll_callback(services)
    assert started.wait(10)
    *_, running_run = poll(1, job.id)
    assert running_run is True  # no second start while one runs

    restarted = Services.build(settings_factory())  # the server was killed and came back
    _, wrapper, status, poll_off, cancel_off, results, run_off = poll_callback(restarted)(
        2, job.id)
    assert INTERRUPTED_MESSAGE in text(status) and text(status).startswith("HH")
    assert "note-warning" in status.className and status.role == "alert"
    assert (poll_off, cancel_off, run_off) == (True, True, False)
    assert wrapper == HIDDEN and results is not None  # no_update: earlier results stay
    release.set()
    restarted.jobs.shutdown()


def test_a_finished_job_renders_and_enables_the_run_button(services) -> None:
    job = services.jobs.submit("heterogeneity", lambda progress: {"value": 7})
    poll = poll_callback(services)
    while services.jobs.get(job.id).finished is None:
        pass
    _, _, status, poll_off, cancel_off, results, run_off = poll(1, job.id)
    assert text(status) == "HH done" and results == "rendered 7"
    assert (poll_off, cancel_off, run_off) == (True, True, False)


def test_an_unknown_job_leaves_the_run_button_enabled(services) -> None:
    *_, run_off = poll_callback(services)(1, "job_unknown")
    assert run_off is False
