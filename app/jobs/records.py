"""Job records in the store: what survives a restart of the server.

A job is a ``job`` record whose metadata holds its status, progress, message, error,
times and ``params`` (what was asked). A succeeded job's result is kept as a document
when it is small (:data:`RESULT_BYTES`); larger results live in memory only, and most
are cached by their own service, so running the job again returns them at once.
"""

from __future__ import annotations

import json
import logging

from app.jobs.failures import without_traceback
from app.jobs.job import ACTIVE, INTERRUPTED_MESSAGE, Job, Progress
from app.store import Record, Store, now

KIND = "job"
#: Largest JSON result kept with a job record.
RESULT_BYTES = 1 << 20
#: Job records kept; older ones are deleted at start.
KEEP_RECORDS = 500
RESULT_NOT_KEPT = ("done before the server restarted; its result was too large to keep: run it "
                   "again (cached results return at once)")

logger = logging.getLogger("calibdash")


class JobRecords:
    """Saves jobs as records of ``store`` and rebuilds them after a restart."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def save(self, job: Job, *, final: bool = False) -> None:
        """Write the job's record; ``final`` also keeps a small result as a document."""
        kept = final and job.status == "succeeded" and self._keep_result(job)
        meta = {"status": job.status, "progress": round(job.progress.fraction, 4),
                "message": job.progress.message, "detail": job.progress.detail,
                "error": job.error, "finished": job.finished, "params": job.params,
                "estimate": job.estimate, "result_kept": kept}
        try:
            self._store.put(Record(KIND, job.id, None, job.kind, job.created, meta))
        except (TypeError, ValueError):  # a detail that is not JSON: keep the rest
            self._store.put(Record(KIND, job.id, None, job.kind, job.created,
                                   {**meta, "detail": None}))

    def save_quietly(self, job: Job, *, final: bool = False) -> None:
        """:meth:`save`, logging rather than raising: a job does not fail for its record."""
        try:
            self.save(job, final=final)
        except Exception:
            logger.exception("could not save the record of job %s", job.id)

    def _keep_result(self, job: Job) -> bool:
        try:
            text = json.dumps(job.result, allow_nan=False)
        except (TypeError, ValueError):
            return False
        if len(text) > RESULT_BYTES:
            return False
        self._store.write_document(job.id, job.result)
        return True

    def load(self, job_id: str) -> Job | None:
        """The job as its record left it (a finished or interrupted job), or None."""
        record = self._store.get(KIND, job_id)
        if record is None:
            return None
        meta = record.meta
        progress = Progress(fraction=float(meta["progress"]), message=str(meta["message"]),
                            detail=meta.get("detail"))
        job = Job(id=record.id, kind=record.name, status=meta["status"], progress=progress,
                  error=without_traceback(record.id, meta.get("error")), created=record.created,
                  finished=meta.get("finished"),
                  params=meta.get("params"), estimate=meta.get("estimate"))
        if job.status == "succeeded":
            if meta.get("result_kept") and self._store.has_document(job.id):
                job.result = self._store.read_document(job.id)
            else:
                progress.message = RESULT_NOT_KEPT
        return job

    def recover(self) -> list[str]:
        """At start: mark jobs left queued or running as interrupted, drop the oldest records.

        Returns the ids of the interrupted jobs.
        """
        records = self._store.find(KIND)
        interrupted = []
        for record in records:
            if record.meta.get("status") not in ACTIVE:
                continue
            meta = {**record.meta, "status": "interrupted", "message": INTERRUPTED_MESSAGE,
                    "finished": now(),
                    "error": {"code": "interrupted", "message": INTERRUPTED_MESSAGE,
                              "details": {"params": record.meta.get("params")}}}
            self._store.put(Record(KIND, record.id, None, record.name, record.created, meta))
            interrupted.append(record.id)
        if interrupted:
            logger.warning("marked %d job(s) interrupted by a restart: %s", len(interrupted),
                           ", ".join(interrupted))
        for record in records[:max(0, len(records) - KEEP_RECORDS)]:
            self._store.delete(KIND, record.id)
        return interrupted
