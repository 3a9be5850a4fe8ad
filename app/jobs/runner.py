"""Background jobs with progress and cancellation.

Long computations run in a small thread pool; the REST API and the UI poll
``Job.snapshot()``. A job's function receives a :class:`Progress` to report
fractions and check for cancellation.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from app.store import new_id, now
from calibcore.exceptions import CalibrationInputError

JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]


class JobCancelled(Exception):
    """Raised inside a job when the user cancelled it."""


@dataclass
class Progress:
    """What a running job reports: a fraction in [0, 1] and a message."""

    fraction: float = 0.0
    message: str = "queued"
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    #: Optional JSON-able structure, e.g. per-step progress of a multi-step job.
    detail: Any = None

    def update(self, fraction: float, message: str | None = None, *,
               detail: Any = None) -> None:
        """Report progress; raises :class:`JobCancelled` if the job was cancelled."""
        if self.cancel_requested.is_set():
            raise JobCancelled
        self.fraction = min(max(float(fraction), 0.0), 1.0)
        if message is not None:
            self.message = message
        if detail is not None:
            self.detail = detail


@dataclass
class Job:
    """A submitted computation and its outcome."""

    id: str
    kind: str
    status: JobStatus = "queued"
    progress: Progress = field(default_factory=Progress)
    result: Any = None
    error: dict[str, Any] | None = None
    created: str = field(default_factory=now)
    finished: str | None = None

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able view of the job's state."""
        return {
            "id": self.id, "kind": self.kind, "status": self.status,
            "progress": round(self.progress.fraction, 4), "message": self.progress.message,
            "detail": self.progress.detail,
            "result": self.result if self.status == "succeeded" else None,
            "error": self.error, "created": self.created, "finished": self.finished,
        }


class JobRunner:
    """Runs jobs on a thread pool and remembers them (in memory) for polling."""

    def __init__(self, workers: int = 2) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="calibdash-job")
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def submit(self, kind: str, function: Callable[[Progress], Any]) -> Job:
        """Queue ``function(progress)``; its return value becomes the job's result."""
        job = Job(id=new_id("job"), kind=kind)
        with self._lock:
            self._jobs[job.id] = job
        self._executor.submit(self._run, job, function)
        return job

    def _run(self, job: Job, function: Callable[[Progress], Any]) -> None:
        if job.progress.cancel_requested.is_set():
            job.status = "cancelled"
            job.finished = now()
            return
        job.status = "running"
        job.progress.message = "running"
        try:
            job.result = function(job.progress)
            job.progress.fraction = 1.0
            job.progress.message = "done"
            job.status = "succeeded"
        except JobCancelled:
            job.status = "cancelled"
            job.progress.message = "cancelled"
        except CalibrationInputError as exc:
            job.status = "failed"
            job.error = {"code": exc.code, "message": exc.message, "details": exc.details()}
        except Exception as exc:  # a bug: keep the server up, report it on the job
            job.status = "failed"
            job.error = {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}",
                         "details": {"traceback": traceback.format_exc(limit=5)}}
        finally:
            job.finished = now()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def cancel(self, job_id: str) -> Job | None:
        job = self.get(job_id)
        if job is not None and job.status in ("queued", "running"):
            job.progress.cancel_requested.set()
        return job

    def shutdown(self) -> None:
        for job in list(self._jobs.values()):
            job.progress.cancel_requested.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
