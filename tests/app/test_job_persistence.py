"""What survives a killed server: job records (as interrupted), and what does not: leftovers.

A "restart" here is a second :class:`Services` (or app) built on the same data directory
while the first one's job still runs, which is what the store sees after ``kill -9``;
the last test kills a real server process.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.jobs import INTERRUPTED_MESSAGE, JobCancelled, Progress
from app.jobs.records import RESULT_BYTES
from app.main import create_app
from app.services.context import Services
from app.store import Record, new_id
from tests.app.test_api import assert_error, upload
from tests.live_server import ServerProcess, free_port, start_server, wait_until_healthy

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def default_nb(shared_data) -> bytes:  # type: ignore[no-untyped-def]
    return (shared_data / "default_nb.csv").read_bytes()


@pytest.fixture
def services(settings_factory) -> Iterator[Services]:  # type: ignore[no-untyped-def]
    built = Services.build(settings_factory())
    yield built
    built.jobs.shutdown()


def wait_until(condition: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def blocking_job(services: Services, *, fraction: float = 0.4):  # type: ignore[no-untyped-def]
    """A running job that reports ``fraction`` and then waits until it is cancelled."""
    started = threading.Event()

    def work(progress: Progress) -> None:
        progress.update(fraction, "half way through the forests")
        started.set()
        while True:
            progress.update(fraction)
            progress.loops = getattr(progress, "loops", 0) + 1  # type: ignore[attr-defined]
            time.sleep(0.01)

    job = services.jobs.submit("heterogeneity", work,
                               params={"dataset_id": "ds_x", "radius": 0.1, "sample": None})
    assert started.wait(10)
    return job


def as_if_killed(job) -> None:  # type: ignore[no-untyped-def]
    """Stop a job's record writes, as kill -9 would: a restarted server in the same test
    process must not see the "killed" one write 'running' over its 'interrupted'."""
    job.progress.listener = None
    seen = getattr(job.progress, "loops", 0)
    wait_until(lambda: getattr(job.progress, "loops", 0) >= seen + 2)  # no write in flight


# -- job records -------------------------------------------------------------------------------
def test_a_running_job_is_interrupted_after_a_restart(services, settings_factory) -> None:
    job = blocking_job(services)
    assert services.jobs.get(job.id).status == "running"
    as_if_killed(job)

    restarted = Services.build(settings_factory())  # the first server "was killed"
    again = restarted.jobs.get(job.id)
    assert again is not None and again.status == "interrupted"
    snapshot = again.snapshot()
    assert snapshot["message"] == INTERRUPTED_MESSAGE
    assert snapshot["error"]["code"] == "interrupted"
    assert snapshot["progress"] == pytest.approx(0.4)  # as far as it was persisted
    assert snapshot["params"] == {"dataset_id": "ds_x", "radius": 0.1, "sample": None}
    assert restarted.jobs.cancel(job.id).status == "interrupted"  # nothing left to cancel
    restarted.jobs.shutdown()


def test_rest_reports_an_interrupted_job_instead_of_404(services, settings_factory) -> None:
    job = blocking_job(services)
    as_if_killed(job)
    with TestClient(create_app(settings_factory())) as client:
        response = client.get(f"/api/v1/jobs/{job.id}")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "interrupted" and "run it again" in body["message"]
        assert body["kind"] == "heterogeneity" and body["params"]["radius"] == 0.1
        assert body["result"] is None
        assert_error(client.get("/api/v1/jobs/job_missing"), 404, "not_found")


def test_finished_jobs_keep_their_status_and_small_results(services, settings_factory) -> None:
    small = services.jobs.submit("metrics", lambda progress: {"ece": 0.25},
                                 params={"dataset_id": "ds_y"})
    large = services.jobs.submit("lce", lambda progress: {"rows": "x" * (RESULT_BYTES + 10)})

    def failing(progress: Progress) -> None:
        raise ValueError("boom")

    failed = services.jobs.submit("support", failing)
    # the record is written just after the job object says it finished: wait for both
    wait_until(lambda: all(services.store.get("job", j.id).meta.get("finished")
                           for j in (small, large, failed)))
    restarted = Services.build(settings_factory())
    kept = restarted.jobs.get(small.id).snapshot()
    assert kept["status"] == "succeeded" and kept["result"] == {"ece": 0.25}
    assert kept["params"] == {"dataset_id": "ds_y"} and kept["finished"] is not None
    dropped = restarted.jobs.get(large.id).snapshot()
    assert dropped["status"] == "succeeded" and dropped["result"] is None
    assert "run it again" in dropped["message"]
    failure = restarted.jobs.get(failed.id).snapshot()
    assert failure["status"] == "failed" and failure["error"]["code"] == "internal_error"
    # the exception's own text stays in the server's log; the client gets its type and the id
    assert "ValueError" in failure["error"]["message"] and "boom" not in str(failure["error"])
    assert failure["error"]["details"] == {"job_id": failed.id}
    restarted.jobs.shutdown()


@pytest.mark.slow
def test_progress_is_written_at_most_about_once_a_second(services, monkeypatch) -> None:
    writes: list[str] = []
    put = services.store.put
    monkeypatch.setattr(services.store, "put",
                        lambda record: (writes.append(record.meta.get("status")), put(record)))

    def work(progress: Progress) -> str:
        deadline = time.monotonic() + 1.5
        count = 0
        while time.monotonic() < deadline:
            progress.update(0.5, "busy")
            count += 1
        return f"{count} updates"

    job = services.jobs.submit("variables", work)
    wait_until(lambda: services.store.get("job", job.id).meta["status"] == "succeeded")
    updates = int(services.jobs.get(job.id).result.split()[0])
    assert updates > 10_000  # updating is cheap...
    assert len(writes) <= 6  # ...and writes are few: queued, running, ~2 progress, final
    assert writes[0] == "queued" and writes[-1] == "succeeded"


def test_a_graceful_shutdown_interrupts_running_jobs(services, settings_factory) -> None:
    job = blocking_job(services)
    services.jobs.shutdown()
    wait_until(lambda: services.jobs.get(job.id).status != "running")
    assert services.jobs.get(job.id).status == "interrupted"
    assert Services.build(settings_factory()).jobs.get(job.id).status == "interrupted"


def test_a_cancelled_job_stays_cancelled_after_a_restart(services, settings_factory) -> None:
    job = blocking_job(services)
    services.jobs.cancel(job.id)
    wait_until(lambda: services.jobs.get(job.id).status == "cancelled")
    wait_until(lambda: services.store.get("job", job.id).meta["status"] == "cancelled")
    assert Services.build(settings_factory()).jobs.get(job.id).status == "cancelled"
    with pytest.raises(JobCancelled):
        job.progress.check()


# -- leftovers ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_leftovers_and_orphans_are_removed_at_start_and_datasets_kept(
        settings_factory, default_nb, caplog) -> None:
    settings = settings_factory()
    with TestClient(create_app(settings)) as client:
        dataset = upload(client, default_nb).json()["id"]
        metrics = client.get(f"/api/v1/datasets/{dataset}/metrics").json()
    root = settings.data_dir
    orphan = new_id("ds")
    leftovers = [
        root / "incoming" / ".upload-k1ll3d",                        # a spooled upload
        root / "tables" / f".{dataset}.parquet.x81ty.tmp",            # an atomic write
        root / "documents" / f".{orphan}.json.a1b2.tmp",
        root / "tables" / f"{orphan}.parquet",                       # table, no record
        root / "tables" / f"{orphan}.column.hh.parquet",
        root / "documents" / f"{orphan}.hh.0123456789abcdef0123.json",
    ]
    kept = [root / "tables" / "notes.parquet",   # not named after a record: not ours to judge
            root / "documents" / f"{dataset}.metrics.00000000000000000000.json"]
    for path in leftovers + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0" * 4096)
    before = sorted(p.name for p in (root / "tables").iterdir())

    with caplog.at_level(logging.WARNING, logger="calibdash"), \
            TestClient(create_app(settings)) as client:
        assert client.get(f"/api/v1/datasets/{dataset}/metrics").json() == metrics
    assert [p for p in leftovers if p.exists()] == []
    assert all(p.exists() for p in kept)
    assert (root / "tables" / f"{dataset}.parquet").exists()
    assert len(before) - len(list((root / "tables").iterdir())) == 3
    logged = caplog.text
    assert ".upload-k1ll3d" in logged and f"{orphan}.parquet" in logged and "4,096 bytes" in logged


def test_an_aborted_upload_leaves_no_spooled_copy(client, default_nb) -> None:
    """An upload refused while it is parsed removes its spooled file at once."""
    incoming = client.app.state.services.settings.data_dir / "incoming"
    response = upload(client, b"y_true,y_prob\n0,1.5\n1,0.2\n")
    assert_error(response, 422, "probability_out_of_range")
    assert incoming.is_dir()  # it was spooled there
    assert not incoming.exists() or list(incoming.iterdir()) == []


def test_an_upload_is_written_once_into_the_incoming_folder(client, default_nb,
                                                             monkeypatch) -> None:
    """A file of several MiB arrives in the data directory's incoming folder only: nothing
    spools it to the system's temporary folder, and it is whole when parsed."""
    import starlette.formparsers

    rolled: list[int] = []

    class Watched(starlette.formparsers.SpooledTemporaryFile):  # type: ignore[misc]
        def rollover(self) -> None:
            rolled.append(self.tell())
            super().rollover()

    monkeypatch.setattr(starlette.formparsers, "SpooledTemporaryFile", Watched)
    header, rows = default_nb.split(b"\n", 1)
    big = header + b"\n" + rows * 40  # about 8 MiB: Starlette spools past 1 MiB
    seen: list[tuple[str, int]] = []
    parse = client.app.state.services.datasets.create_from_file

    def spy(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((path.parent.name, path.stat().st_size))
        return parse(path, *args, **kwargs)

    monkeypatch.setattr(client.app.state.services.datasets, "create_from_file", spy)
    response = upload(client, big)
    assert response.status_code == 201, response.text
    assert response.json()["n_rows"] == 40 * (default_nb.count(b"\n") - 1)
    assert seen == [("incoming", len(big))] and rolled == []
    incoming = client.app.state.services.settings.data_dir / "incoming"
    assert list(incoming.iterdir()) == []


@pytest.mark.parametrize("body", [
    # the body ends inside the file part: the part never reaches the form
    b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.csv"\r\n\r\n'
    + b"y_true,y_prob\n" + b"1,0.5\n" * 50_000,
    # a second file part beside the one the route reads
    b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.csv"\r\n\r\n'
    b"y_true,y_prob\n1,0.5\n0,0.2\n\r\n--b\r\nContent-Disposition: form-data; "
    b'name="other"; filename="y.csv"\r\n\r\nabc\r\n--b--\r\n',
], ids=["truncated", "extra-file"])
def test_no_incoming_file_outlives_its_request(client, body: bytes) -> None:
    response = client.post("/api/v1/uploads", content=body,
                           headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert response.status_code in (201, 422), response.text
    incoming = client.app.state.services.settings.data_dir / "incoming"
    assert not incoming.exists() or list(incoming.iterdir()) == []


def test_an_incoming_file_past_the_upload_limit_is_refused_as_it_is_written(
        tmp_path) -> None:
    import asyncio

    from starlette.datastructures import Headers
    from starlette.exceptions import HTTPException

    from app.api.uploads import IncomingUpload

    path = tmp_path / ".upload-x"
    upload = IncomingUpload(path.open("w+b"), path=path, limit=10, filename="f.csv",
                            headers=Headers())
    asyncio.run(upload.write(b"0123456789"))
    with pytest.raises(HTTPException) as refused:
        asyncio.run(upload.write(b"!"))
    assert refused.value.status_code == 413 and "CALIBDASH_MAX_UPLOAD_BYTES" in str(
        refused.value.detail)
    asyncio.run(upload.close())
    assert not path.exists()


# -- staged uploads ----------------------------------------------------------------------------
def _stage(client, content: bytes) -> str:  # type: ignore[no-untyped-def]
    response = client.post("/api/v1/uploads", files={"file": ("staged.csv", content)})
    assert response.status_code == 201, response.text
    return str(response.json()["upload_id"])


def _age(services: Services, upload_id: str, hours: float) -> None:
    record = services.store.get("upload", upload_id)
    created = (datetime.now(UTC) - timedelta(hours=hours)).isoformat(timespec="microseconds")
    services.store.put(Record("upload", record.id, record.parent, record.name, created,
                              record.meta))


def test_staged_uploads_expire_when_another_is_staged(client, default_nb) -> None:
    services = client.app.state.services
    old, recent = _stage(client, default_nb), _stage(client, default_nb)
    _age(services, old, hours=services.settings.staged_upload_hours + 0.1)
    _age(services, recent, hours=services.settings.staged_upload_hours - 0.5)
    assert services.store.table_path(old).exists()
    newest = _stage(client, default_nb)

    assert services.store.get("upload", old) is None
    assert not services.store.table_path(old).exists()
    for kept in (recent, newest):
        assert services.store.get("upload", kept) is not None
    error = assert_error(client.post(f"/api/v1/uploads/{old}/confirm", json={}), 404, "not_found")
    assert "expired" in error["message"] and "never staged" in error["message"]
    confirmed = client.post(f"/api/v1/uploads/{recent}/confirm", json={})
    assert confirmed.status_code == 201, confirmed.text


def test_staged_uploads_expire_at_start(settings_factory, default_nb) -> None:
    settings = settings_factory(staged_upload_hours=1.0)
    with TestClient(create_app(settings)) as client:
        services = client.app.state.services
        old, recent = _stage(client, default_nb), _stage(client, default_nb)
        _age(services, old, hours=1.5)
    restarted = Services.build(settings)
    assert restarted.store.get("upload", old) is None
    assert not restarted.store.table_path(old).exists()
    assert restarted.store.get("upload", recent) is not None
    restarted.jobs.shutdown()


# -- the real thing: kill -9 -------------------------------------------------------------------
def _serve(port: int, data_dir: Path, log: Path) -> ServerProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CALIBDASH_")}
    env.update(CALIBDASH_WARM_UP="false", PYTHONWARNINGS="ignore")
    process = start_server(["serve", "--port", str(port), "--data-dir", str(data_dir),
                            "--no-example"], env=env, log=log, cwd=REPO)
    wait_until_healthy(f"http://127.0.0.1:{port}", process, log)
    return process


def _json(url: str, body: bytes | None = None, method: str = "GET") -> Any:
    import json

    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _upload(url: str, content: bytes) -> dict[str, Any]:
    import json

    boundary = "calibdash-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            "filename=\"default_nb.csv\"\r\nContent-Type: text/csv\r\n\r\n").encode() \
        + content + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(f"{url}/datasets", data=body, method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return dict(json.loads(response.read()))


@pytest.mark.slow
def test_kill_9_mid_job_and_mid_upload_leaves_a_consistent_store(tmp_path, default_nb) -> None:
    port, data_dir, log = free_port(), tmp_path / "store", tmp_path / "server.log"
    url = f"http://127.0.0.1:{port}/api/v1"
    server = _serve(port, data_dir, log)
    try:
        dataset = _upload(url, default_nb)["id"]
        metrics = _json(f"{url}/datasets/{dataset}/metrics")
        job = _json(f"{url}/datasets/{dataset}/heterogeneity", b'{"sample": "all"}', "POST")
        wait_until(lambda: _json(f"{url}/jobs/{job['job_id']}")["progress"] > 0.05, 120)

        # an upload of 350,000 rows, killed while the server handles it (spooled to
        # incoming/, being parsed and stored)
        header, rows = default_nb.split(b"\n", 1)
        boundary = "b0undary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                "filename=\"big.csv\"\r\nContent-Type: text/csv\r\n\r\n").encode() \
            + header + b"\n" + rows * 50 + f"\r\n--{boundary}--\r\n".encode()
        stream = socket.create_connection(("127.0.0.1", port))
        stream.sendall((f"POST /api/v1/datasets HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        incoming = data_dir / "incoming"
        wait_until(lambda: incoming.exists() and any(incoming.iterdir()), 60)
        os.kill(server.pid, signal.SIGKILL)
        server.wait(10)
        stream.close()
        assert any(incoming.iterdir())  # the kill left the spooled upload behind

        server = _serve(port, data_dir, log)
        assert not any(incoming.iterdir())
        assert not list(data_dir.glob("**/.*.tmp"))
        assert [d["id"] for d in _json(f"{url}/datasets")] == [dataset]
        assert _json(f"{url}/datasets/{dataset}/metrics") == metrics
        after = _json(f"{url}/jobs/{job['job_id']}")
        assert after["status"] == "interrupted", after
        assert "run it again" in after["message"]
        assert after["params"]["dataset_id"] == dataset and after["params"]["sample"] is None
        assert "removed an upload left by an interrupted request" in log.read_text()
    finally:
        server.kill()
        server.wait(10)
