"""What a failed job tells whoever polls it: a code, what to do and the job's id, never a
traceback; the traceback goes to the server's log under the job's id."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from app.jobs import Progress
from app.jobs.failures import DATASET_DELETED_MESSAGE, OUT_OF_MEMORY_MESSAGE
from app.services import variables
from app.services.context import Services
from app.store import NotFound, Record
from tests.app.test_api import upload

SERVER_PATH = "/srv/calibdash/data/tables/ds_secret.parquet"


@pytest.fixture
def dataset_id(client, shared_data) -> str:  # type: ignore[no-untyped-def]
    response = upload(client, (shared_data / "default_nb.csv").read_bytes(), "default_nb.csv")
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def services_of(client) -> Services:  # type: ignore[no-untyped-def]
    return client.app.state.services  # type: ignore[no-any-return]


def finished(client, job_id: str, seconds: float = 60) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The job's snapshot once it has ended (polled through the API)."""
    deadline = time.monotonic() + seconds
    while True:
        snapshot: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}").json()
        if snapshot["status"] not in ("queued", "running"):
            return snapshot
        assert time.monotonic() < deadline, f"job {job_id} did not end in {seconds} s"
        time.sleep(0.02)


def keys_anywhere(value: Any) -> Iterator[str]:
    """Every key of every mapping nested in ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from keys_anywhere(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys_anywhere(item)


def failing(error: BaseException):  # type: ignore[no-untyped-def]
    def work(progress: Progress) -> None:
        progress.update(0.5, "half way")
        raise error

    return work


# -- an unexpected error ------------------------------------------------------------------
def test_a_bug_in_a_job_reaches_the_log_not_the_client(client, caplog) -> None:
    caplog.set_level(logging.INFO, logger="calibdash")
    job = services_of(client).jobs.submit(
        "variables", failing(RuntimeError(f"could not open {SERVER_PATH}")))
    snapshot = finished(client, job.id)

    assert snapshot["status"] == "failed"
    assert "traceback" not in set(keys_anywhere(snapshot))
    error = snapshot["error"]
    assert error["code"] == "internal_error" and error["details"] == {"job_id": job.id}
    assert job.id in error["message"] and "RuntimeError" in error["message"]
    assert "/" not in json.dumps(error) and "Traceback" not in json.dumps(snapshot)

    logged = [record for record in caplog.records if record.levelno == logging.ERROR
              and job.id in record.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert "Traceback" in caplog.text and SERVER_PATH in caplog.text
    assert "in work" in caplog.text  # the traceback down to the failing function


def test_a_stored_failure_says_the_same_after_a_restart(client, settings_factory) -> None:
    job = services_of(client).jobs.submit("variables", failing(KeyError(SERVER_PATH)))
    snapshot = finished(client, job.id)
    restarted = Services.build(settings_factory())
    try:
        reloaded = restarted.jobs.get(job.id)
        assert reloaded is not None and reloaded.error == snapshot["error"]
    finally:
        restarted.jobs.shutdown()


def test_a_record_kept_by_an_older_server_loses_its_traceback(client) -> None:
    services = services_of(client)
    services.store.put(Record("job", "job_old", None, "heterogeneity", "2024-01-01T00:00:00", {
        "status": "failed", "progress": 0.3, "message": "running", "detail": None,
        "finished": "2024-01-01T00:01:00", "params": None, "result_kept": False,
        "error": {"code": "internal_error", "message": f"OSError: {SERVER_PATH} is gone",
                  "details": {"traceback": f'File "{SERVER_PATH}", line 1'}}}))
    error = client.get("/api/v1/jobs/job_old").json()["error"]
    assert error["code"] == "internal_error" and error["details"] == {"job_id": "job_old"}
    assert "OSError" in error["message"] and "/" not in json.dumps(error)


# -- known failures -----------------------------------------------------------------------
def test_running_out_of_memory_suggests_a_smaller_computation(client, caplog) -> None:
    caplog.set_level(logging.INFO, logger="calibdash")
    job = services_of(client).jobs.submit("heterogeneity", failing(MemoryError()))
    error = finished(client, job.id)["error"]
    assert error == {"code": "out_of_memory", "message": OUT_OF_MEMORY_MESSAGE,
                     "details": {"job_id": job.id}}
    assert "sample" in error["message"]
    assert any(record.levelno == logging.ERROR and job.id in record.getMessage()
               for record in caplog.records)


def test_another_deleted_record_is_not_found(client) -> None:
    job = services_of(client).jobs.submit("recalibration",
                                          failing(NotFound("model", "md_gone")))
    error = finished(client, job.id)["error"]
    assert error["code"] == "not_found" and "md_gone" in error["message"]
    assert error["details"] == {"job_id": job.id, "kind": "model", "id": "md_gone"}


def test_a_cancelled_job_is_cancelled_not_failed(client) -> None:
    started = threading.Event()

    def work(progress: Progress) -> None:
        started.set()
        while True:
            progress.check()
            time.sleep(0.01)

    job = services_of(client).jobs.submit("variables", work)
    assert started.wait(10)
    assert client.delete(f"/api/v1/jobs/{job.id}").status_code == 200
    snapshot = finished(client, job.id)
    assert snapshot["status"] == "cancelled" and snapshot["error"] is None


# -- a dataset deleted while its job runs -------------------------------------------------
@pytest.fixture
def gated_ranking(monkeypatch) -> tuple[threading.Event, threading.Event]:  # type: ignore[no-untyped-def]
    """The ranking's computation waits, once it started, until ``release`` is set: the
    dataset is deleted at a known point of the job, whatever the machine's speed."""
    started, release = threading.Event(), threading.Event()
    compute = variables.compute_ranking

    def gated(*args: Any, **kwargs: Any) -> dict[str, Any]:
        started.set()
        assert release.wait(30)
        return compute(*args, **kwargs)

    monkeypatch.setattr(variables, "compute_ranking", gated)
    return started, release


def test_deleting_the_dataset_under_its_ranking_job_ends_it_as_deleted(
        client, dataset_id, gated_ranking, caplog) -> None:
    caplog.set_level(logging.INFO, logger="calibdash")
    started, release = gated_ranking
    response = client.get(f"/api/v1/datasets/{dataset_id}/variables",
                          params={"async": "true", "n_permutations": 0, "n_points": 50})
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    assert started.wait(30)
    assert client.delete(f"/api/v1/datasets/{dataset_id}").status_code == 204
    release.set()

    snapshot = finished(client, job_id)
    assert snapshot["status"] == "failed"
    assert snapshot["error"] == {"code": "dataset_deleted", "message": DATASET_DELETED_MESSAGE,
                                 "details": {"job_id": job_id, "dataset_id": dataset_id}}
    # the server logged no error for it (its logger: asyncio's reports of futures other
    # tests' event loops left behind can be collected, and logged, during any test)
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR
                and record.name.partition(".")[0] == "calibdash"]
    assert client.get(f"/api/v1/datasets/{dataset_id}").status_code == 404


def test_a_read_broken_by_the_deletion_is_reported_as_the_deletion(client, dataset_id) -> None:
    """A deletion can surface as another error (a table file gone halfway through a read);
    once the job's dataset is gone, that error is the deletion, not a bug."""
    started, release = threading.Event(), threading.Event()

    def work(progress: Progress) -> None:
        started.set()
        assert release.wait(30)
        raise FileNotFoundError(2, "No such file or directory", SERVER_PATH)

    job = services_of(client).jobs.submit("heterogeneity", work,
                                          params={"dataset_id": dataset_id, "radius": 0.1})
    assert started.wait(10)
    assert client.delete(f"/api/v1/datasets/{dataset_id}").status_code == 204
    release.set()
    error = finished(client, job.id)["error"]
    assert error["code"] == "dataset_deleted" and error["details"] == {"job_id": job.id}
    assert "/" not in json.dumps(error)


def test_the_same_error_with_the_dataset_still_there_is_a_bug(client, dataset_id) -> None:
    job = services_of(client).jobs.submit(
        "heterogeneity", failing(FileNotFoundError(2, "No such file", SERVER_PATH)),
        params={"dataset_id": dataset_id})
    assert finished(client, job.id)["error"]["code"] == "internal_error"


def test_a_table_gone_before_the_record_is_a_missing_dataset(client, dataset_id) -> None:
    services = services_of(client)
    services.store.table_path(dataset_id).unlink()
    with pytest.raises(NotFound) as raised:
        services.datasets.frame(dataset_id)
    assert raised.value.kind == "dataset" and raised.value.record_id == dataset_id


def test_a_failed_job_is_never_seen_without_its_error(client, monkeypatch) -> None:
    """The error is worked out (logging, looking the dataset up) before the job says
    "failed": a client polling meanwhile sees it running, then failed with its error."""
    from app.jobs import runner

    working, release = threading.Event(), threading.Event()
    real_failure = runner.failure

    def slow_failure(*args: Any, **kwargs: Any) -> dict[str, Any]:
        working.set()
        assert release.wait(30)
        return real_failure(*args, **kwargs)

    monkeypatch.setattr(runner, "failure", slow_failure)
    job = services_of(client).jobs.submit("heterogeneity", failing(RuntimeError("boom")))
    assert working.wait(10)
    seen = client.get(f"/api/v1/jobs/{job.id}").json()
    assert seen["status"] == "running" and seen["error"] is None
    release.set()
    ended = finished(client, job.id)
    assert ended["status"] == "failed" and ended["error"]["code"] == "internal_error"


def test_deleting_a_dataset_stops_its_running_jobs_and_only_those(client, dataset_id,
                                                                  shared_data) -> None:
    """A deleted dataset's work stops at its next progress check (it held a core until
    it ended before) and says why; a job of another dataset runs on."""
    response = upload(client, (shared_data / "default_nb.csv").read_bytes(), "other.csv")
    other = response.json()["id"]
    runs = {dataset_id: threading.Event(), other: threading.Event()}
    release = threading.Event()

    def work(dataset: str):  # type: ignore[no-untyped-def]
        def loop(progress: Progress) -> str:
            runs[dataset].set()
            while not release.is_set():  # a long computation that checks in often
                progress.check()
                time.sleep(0.01)
            return "done"
        return loop

    jobs = services_of(client).jobs
    deleted = jobs.submit("heterogeneity", work(dataset_id), params={"dataset_id": dataset_id})
    kept = jobs.submit("heterogeneity", work(other), params={"dataset_id": other})
    assert runs[dataset_id].wait(10) and runs[other].wait(10)
    began = time.monotonic()
    assert client.delete(f"/api/v1/datasets/{dataset_id}").status_code == 204
    snapshot = finished(client, deleted.id, seconds=5)
    assert time.monotonic() - began < 2.0
    assert snapshot["status"] == "failed"
    assert snapshot["error"] == {"code": "dataset_deleted", "message": DATASET_DELETED_MESSAGE,
                                 "details": {"job_id": deleted.id, "dataset_id": dataset_id}}
    assert client.get(f"/api/v1/jobs/{kept.id}").json()["status"] == "running"
    release.set()
    assert finished(client, kept.id)["status"] == "succeeded"
