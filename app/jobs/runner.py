"""Background jobs with progress and cancellation.

Long computations run in a small thread pool; the REST API and the UI poll
``Job.snapshot()``. A job's function receives a :class:`Progress` to report
fractions and check for cancellation.

With a store, every job is also a record (:mod:`app.jobs.records`), written when it
is submitted, starts and ends, and at most once a second while it reports progress.
A server that dies mid-job leaves the record queued or running; the next start marks
it ``interrupted``, so polling it says to run it again instead of answering 404.

A job that fails tells its client a code and what to do (:mod:`app.jobs.failures`);
the traceback of an unexpected error goes to the server's log, under the job's id.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from app.jobs.failures import deleted_dataset_error, failure
from app.jobs.job import ACTIVE, INTERRUPTED_MESSAGE, Job, JobCancelled, Progress
from app.jobs.records import JobRecords
from app.store import Store, new_id, now
from calibcore.exceptions import CalibrationInputError


class JobRunner:
    """Runs jobs on a thread pool and remembers them for polling.

    Parameters
    ----------
    workers : int
        Threads running jobs.
    store : Store, optional
        Where job records persist; without one, jobs live in memory only. Building
        the runner marks the store's unfinished jobs as interrupted.
    on_idle : callable, optional
        Called when a job ends and no other is running (the server hands the memory
        the jobs freed back to the system).
    """

    def __init__(self, workers: int = 2, store: Store | None = None,
                 on_idle: Callable[[], None] | None = None) -> None:
        self._workers = workers
        self._on_idle = on_idle
        self._executor = self._new_executor()
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        # jobs told to stop because a dataset they read was deleted: job id -> dataset id
        self._deleted_under: dict[str, str] = {}
        self._store = store
        self._records = None if store is None else JobRecords(store)
        if self._records is not None:
            self._records.recover()

    def submit(self, kind: str, function: Callable[[Progress], Any], *,
               params: dict[str, Any] | None = None,
               estimate: dict[str, Any] | None = None) -> Job:
        """Queue ``function(progress)``; its return value becomes the job's result.

        ``params`` (small, JSON-able) says what was asked; it is kept with the record.
        ``estimate`` is the cost estimate said before it started (seconds, range, words).
        """
        if params is not None:  # plain JSON from here on (tuples become lists, ...)
            params = json.loads(json.dumps(params, default=str))
        job = Job(id=new_id("job"), kind=kind, params=params, estimate=estimate)
        if self._records is not None:
            records = self._records
            job.progress.listener = lambda _: records.save_quietly(job)
            records.save(job)
        with self._lock:
            self._jobs[job.id] = job
        self._executor.submit(self._run, job, function)
        return job

    def _run(self, job: Job, function: Callable[[Progress], Any]) -> None:
        try:
            self._execute(job, function)
        finally:
            with self._lock:  # it may have ended before it saw the stop
                self._deleted_under.pop(job.id, None)
            job.finished = now()
            if self._records is not None:
                self._records.save_quietly(job, final=True)
            if self._on_idle is not None:
                with self._lock:
                    idle = not any(other.status == "running" for other in self._jobs.values()
                                   if other is not job)
                if idle:
                    self._on_idle()

    def _execute(self, job: Job, function: Callable[[Progress], Any]) -> None:
        if job.progress.cancel_requested.is_set():
            self._stopped(job)
            return
        job.status = "running"
        job.progress.message = "running"
        job.progress.start()
        if self._records is not None:
            self._records.save_quietly(job)
        try:
            job.result = function(job.progress)
            job.progress.fraction = 1.0
            job.progress.message = "done"
            job.status = "succeeded"
        except JobCancelled:
            self._stopped(job)
        # the error is set before the status: a client polling in between must never see
        # a failed job without its error
        except CalibrationInputError as exc:
            job.error = {"code": exc.code, "message": exc.message, "details": exc.details()}
            job.status = "failed"
        except Exception as exc:  # keep the server up, report it on the job
            job.error = failure(job.id, job.kind, exc,
                                dataset_deleted=lambda: self._dataset_deleted(job))
            job.status = "failed"

    def _dataset_deleted(self, job: Job) -> bool:
        """Whether a dataset named in the job's params (``dataset_id``,
        ``batch_dataset_id``, ...) is no longer in the store."""
        if self._store is None:
            return False
        return any(self._store.get("dataset", dataset_id) is None
                   for dataset_id in _named_datasets(job))

    def stop_jobs_reading(self, dataset_id: str) -> list[str]:
        """Stop the queued and running jobs that read ``dataset_id`` (just deleted): each
        ends failed with ``dataset_deleted`` at its next progress check, so a deleted
        dataset's work stops holding a core. Returns the ids of the jobs told to stop."""
        with self._lock:
            jobs = [job for job in self._jobs.values()
                    if job.status in ACTIVE and dataset_id in _named_datasets(job)]
            for job in jobs:
                self._deleted_under.setdefault(job.id, dataset_id)
        for job in jobs:
            job.progress.cancel_requested.set()
        return [job.id for job in jobs]

    def _stopped(self, job: Job) -> None:
        """Cancelled by the user, stopped because its dataset was deleted, or interrupted
        by the server shutting down."""
        with self._lock:
            deleted = self._deleted_under.pop(job.id, None)
        if deleted is not None and not self._stopping.is_set():
            job.error = deleted_dataset_error(job.id, deleted)
            job.progress.message = job.error["message"]
            job.status = "failed"
        elif self._stopping.is_set():
            job.progress.message = INTERRUPTED_MESSAGE
            job.error = {"code": "interrupted", "message": INTERRUPTED_MESSAGE,
                         "details": {"params": job.params}}
            job.status = "interrupted"
        else:
            job.status = "cancelled"
            job.progress.message = "cancelled"

    def get(self, job_id: str) -> Job | None:
        """The job, from memory or (after a restart) as its stored record left it."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None and self._records is not None:
            job = self._records.load(job_id)
        return job

    def cancel(self, job_id: str) -> Job | None:
        job = self.get(job_id)
        if job is not None and job.status in ACTIVE:
            job.progress.cancel_requested.set()
        return job

    def _new_executor(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="calibdash-job")

    def start(self) -> None:
        """Take jobs again after :meth:`shutdown`: an application's lifespan can run more
        than once in one process (test clients, schemathesis), and a runner shut down by
        the first would refuse every job after it."""
        if self._stopping.is_set():
            self._executor = self._new_executor()
            self._stopping.clear()

    def shutdown(self) -> None:
        """Stop every job (they end as interrupted) without waiting for them."""
        self._stopping.set()
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.progress.cancel_requested.set()
        self._executor.shutdown(wait=False, cancel_futures=True)


def _named_datasets(job: Job) -> list[str]:
    """The datasets a job's params name (``dataset_id``, ``batch_dataset_id``, ...)."""
    return [value for key, value in (job.params or {}).items()
            if key.endswith("dataset_id") and isinstance(value, str)]
