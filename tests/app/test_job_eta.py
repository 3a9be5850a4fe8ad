"""The time-left estimate of a running job: a smoothed extrapolation from the time so far
and the fraction done (deterministic with an injected clock), and its place in
``GET /api/v1/jobs/{id}`` while a real job runs."""

from __future__ import annotations

import time

import pytest

from app.jobs import Progress
from app.jobs.job import ETA_MIN_FRACTION, ETA_SMOOTHING, Job
from tests.app.test_api import upload
from tests.app.test_cancel_latency import job_of


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def started(clock: Clock) -> Progress:
    progress = Progress(clock=clock)
    progress.start()
    return progress


def test_no_estimate_until_the_fraction_and_the_clock_have_moved() -> None:
    clock = Clock()
    progress = started(clock)
    assert progress.eta_seconds() is None
    clock.now += 0.5
    progress.update(0.5)  # half done, but too soon to extrapolate from
    assert progress.eta_seconds() is None
    progress = started(clock)
    clock.now += 30
    progress.update(ETA_MIN_FRACTION / 2)  # too little done
    assert progress.eta_seconds() is None


def test_a_steady_pace_extrapolates_linearly_and_counts_down() -> None:
    clock = Clock()
    progress = started(clock)
    clock.now += 10
    progress.update(0.1)
    assert progress.eta_seconds() == pytest.approx(90.0)
    clock.now += 5  # no news: the estimate counts down
    assert progress.eta_seconds() == pytest.approx(85.0)
    for step in range(2, 10):  # the same pace: the estimate stays on it
        clock.now = 100.0 + 10 * step
        progress.update(step / 10)
        assert progress.eta_seconds() == pytest.approx(100 - 10 * step)


def test_a_jump_in_pace_is_smoothed() -> None:
    clock = Clock()
    progress = started(clock)
    clock.now += 10
    progress.update(0.1)  # 90 s left at this pace
    clock.now += 10
    progress.update(0.5)  # a cheap step: the raw extrapolation drops to 20 s
    expected = ETA_SMOOTHING * 20.0 + (1 - ETA_SMOOTHING) * 80.0
    assert progress.eta_seconds() == pytest.approx(expected)


def test_a_stalled_job_is_not_left_at_zero() -> None:
    clock = Clock()
    progress = started(clock)
    clock.now += 10
    progress.update(0.5)  # 10 s left
    clock.now += 30  # overdue, no news: extrapolate from now (40 s for half)
    assert progress.eta_seconds() == pytest.approx(40.0)


def test_the_snapshot_carries_the_estimate_only_while_running() -> None:
    clock = Clock()
    job = Job(id="job_x", kind="test", progress=Progress(clock=clock))
    job.progress.start()
    clock.now += 4
    job.progress.update(0.2)
    assert job.snapshot()["eta_seconds"] is None  # queued
    job.status = "running"
    assert job.snapshot()["eta_seconds"] == pytest.approx(16.0)
    job.status = "succeeded"
    assert job.snapshot()["eta_seconds"] is None


def test_the_time_so_far_moves_through_a_stage_that_reports_nothing() -> None:
    """A stage without progress of its own (UMAP's neighbour graph, a Dask pass) still shows
    a status that changes: the seconds since the job started."""
    from app.ui.job_panel import elapsed, running_status

    clock = Clock()
    job = Job(id="job_x", kind="test", progress=Progress(clock=clock))
    assert job.snapshot()["elapsed_seconds"] is None
    job.status = "running"
    job.progress.start()
    job.progress.update(0.05, "neighbour graph")
    lines = []
    for _ in range(3):
        clock.now += 1.0
        lines.append(running_status(job.snapshot()).children)
    assert lines == [f"neighbour graph — 5% · {s} s so far" for s in (1, 2, 3)]
    assert elapsed(125.0) == "2 min 05 s so far" and elapsed(None) == ""
    job.status = "succeeded"
    assert job.snapshot()["elapsed_seconds"] is None


@pytest.mark.slow
def test_a_running_job_reports_a_moving_fraction_and_a_time_left(client, shared_data) -> None:
    # HH of all 3,474 test rows of default_nb: hundreds of local forests, well over 10 s.
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    job_id = job_of(client.post(f"/api/v1/datasets/{dataset}/heterogeneity",
                                json={"sample": "all"}))
    seen: list[dict] = []
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            job = client.get(f"/api/v1/jobs/{job_id}").json()
            assert job["status"] in ("queued", "running"), job
            if job["eta_seconds"] is not None:
                seen.append(job)
                if len({round(j["progress"], 4) for j in seen}) >= 3:
                    break
            time.sleep(0.2)
        else:
            pytest.fail(f"no moving progress with a time left: {seen[-3:]}")
    finally:
        client.delete(f"/api/v1/jobs/{job_id}")
    assert all(j["eta_seconds"] > 0 for j in seen)
    fractions = [j["progress"] for j in seen]
    assert fractions == sorted(fractions) and fractions[-1] > fractions[0]
