"""Timing jobs through the running server (``calibdash serve``), as the browser meets them.

Shared by the benchmarks of the real path: a prediction file uploaded once
through the staged upload (roles confirmed as a user would), then a job started over
REST and polled to completion. A :class:`JobTiming` holds the wall time, the server's
CPU time over the job (``/proc/<pid>/stat``: on a shared 2-core machine the wall time
alone says little), the load average when it started, and the longest time the job's
progress (fraction or message) stood still.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.bench_upload import prediction_csv
from tests.live_server import LiveServer

#: Seconds between two polls of a job.
POLL_SECONDS = 0.1


@dataclass(frozen=True)
class JobTiming:
    """One job timed from its request to its final status."""

    seconds: float
    cpu_seconds: float
    load: str
    longest_still: float
    status: str
    result: Any

    def note(self) -> str:
        return (f"CPU {self.cpu_seconds:.1f} s, load {self.load}, progress still at most "
                f"{self.longest_still:.1f} s")


@cache
def csv_file(n_rows: int) -> Path:
    """:func:`benchmarks.bench_upload.prediction_csv` of ``n_rows`` (written once per process)."""
    folder = Path(tempfile.mkdtemp(prefix="calibdash-bench-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return prediction_csv(n_rows, folder / f"predictions-{n_rows}.csv")


def request(server: LiveServer, method: str, path: str, body: bytes | None = None,
            content_type: str = "application/json") -> dict[str, Any]:
    call = urllib.request.Request(f"{server.url}{path}", data=body, method=method,
                                  headers={"Content-Type": content_type})
    with urllib.request.urlopen(call, timeout=600) as response:
        return dict(json.loads(response.read()))


def post_file(server: LiveServer, path: str, file: Path) -> dict[str, Any]:
    """POST ``file`` as the multipart form field ``file``, streamed from the disk as a
    browser or ``curl -F`` sends it, not built in memory first (the copies of an 88 MiB
    file took this client 0.17-0.2 s, as long as pandas takes to read it)."""
    boundary = uuid.uuid4().hex
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{file.name}\"\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def parts() -> Iterator[bytes]:
        yield head
        with file.open("rb") as stream:
            while block := stream.read(1 << 20):
                yield block
        yield tail

    call = urllib.request.Request(
        f"{server.url}{path}", data=parts(), method="POST",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                 "Content-Length": str(len(head) + file.stat().st_size + len(tail))})
    with urllib.request.urlopen(call, timeout=600) as response:
        return dict(json.loads(response.read()))


def upload(server: LiveServer, path: Path, features: list[str]) -> str:
    """Stage ``path``, confirm ``features`` and no split column (cross-fitting); the id."""
    staged = post_file(server, "/api/v1/uploads", path)
    roles = json.dumps({"features": features, "no_split": True}).encode()
    created = request(server, "POST", f"/api/v1/uploads/{staged['upload_id']}/confirm", roles)
    return str(created["id"])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def poll_job(server: LiveServer, job_id: str,
             timeout: float = 1800.0) -> tuple[dict[str, Any], float]:
    """Poll a job to its end: the final job and the longest time its progress (fraction or
    message) stood still, up to its end. A job still running after ``timeout`` seconds is
    cancelled and ``TimeoutError`` raised."""
    last_change, last, longest = time.perf_counter(), None, 0.0
    deadline = time.monotonic() + timeout
    while True:
        job = request(server, "GET", f"/api/v1/jobs/{job_id}")
        moment = time.perf_counter()
        state = (job["progress"], job["message"])
        if state != last:
            longest, last_change, last = max(longest, moment - last_change), moment, state
        if job["status"] not in ("queued", "running"):
            return job, max(longest, moment - last_change)
        if time.monotonic() > deadline:
            request(server, "DELETE", f"/api/v1/jobs/{job_id}")
            raise TimeoutError(f"job {job_id} still {job['status']} after {timeout:g} s; "
                               "cancelled")
        time.sleep(POLL_SECONDS)


def timed_job(server: LiveServer, method: str, path: str,
              body: dict[str, Any] | None = None) -> JobTiming:
    """Start a job (the request must answer 202 with ``job_id``) and poll it to the end."""
    load = f"{os.getloadavg()[0]:.1f}"
    cpu = _cpu_seconds(server.process.pid)
    start = time.perf_counter()
    answer = request(server, method, path, None if body is None else json.dumps(body).encode())
    job, longest = poll_job(server, answer["job_id"])
    seconds = time.perf_counter() - start
    return JobTiming(seconds, _cpu_seconds(server.process.pid) - cpu, load, longest,
                     str(job["status"]), job["result"])
