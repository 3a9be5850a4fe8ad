"""The shared job panel's poll callback, called directly (no browser): what each job state
shows, and that the run button is disabled only while a job is queued or running."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dash import Dash

from app.jobs import INTERRUPTED_MESSAGE, Progress
from app.services.context import Services
from app.ui.job_panel import HIDDEN, JobPanel, register_job_panel

#: Where browser tests leave screenshots to look at (CALIBDASH_SCREENSHOTS to change it).
SCREENSHOTS = Path(os.environ.get("CALIBDASH_SCREENSHOTS", "/tmp/calibdash-screenshots"))

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


@pytest.mark.browser
@pytest.mark.slow
def test_a_long_job_shows_its_time_left_and_updates_every_2_s(server, browser) -> None:
    """HH of every test row of default_nb (hundreds of forests) in headless Chromium: the
    status line says the time left, and changes at least every 2 s."""
    import time

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    from tests.ui.browser import WebDriverWait

    browser.get(server + "/overview")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda b: "default_nb" in b.find_element(By.ID, "dataset-picker").text)
    wait.until(ec.element_to_be_clickable((By.LINK_TEXT, "Heterogeneity"))).click()
    wait.until(lambda b: "Compute HH" in b.find_element(By.ID, "hh-results").text)
    assert browser.find_element(By.CSS_SELECTOR, "#hh-all-rows input").is_selected()
    browser.find_element(By.ID, "hh-run").click()
    WebDriverWait(browser, 120).until(
        lambda b: " left" in b.find_element(By.ID, "hh-status").text)
    seen = [browser.find_element(By.ID, "hh-status").text]
    last_change = time.monotonic()
    while len(seen) < 5:
        time.sleep(0.1)
        status = browser.find_element(By.ID, "hh-status").text
        if status != seen[-1]:
            seen.append(status)
            assert time.monotonic() - last_change <= 2.0, seen
            last_change = time.monotonic()
        assert time.monotonic() - last_change <= 2.0, f"status stood still: {seen[-1]}"
    assert all(" left" in status and "%" in status for status in seen), seen
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "hh-running-time-left.png"))
    browser.find_element(By.ID, "hh-cancel").click()
    wait.until(lambda b: "cancelled" in b.find_element(By.ID, "hh-status").text)
