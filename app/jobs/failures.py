"""What a failed job tells whoever polls it, and what it leaves in the server's log.

A job's error is read by any client that knows the job's id, so it holds a code, a
sentence a person can act on and the job's id, never a traceback: tracebacks name
server paths and library internals, and belong in the server's log, where an
operator finds them under the same job id. Known failures have codes of their own:

- ``dataset_deleted``: a dataset the job reads was deleted while it ran;
- ``not_found``: another record it reads (a model, a recalibration) was deleted;
- ``out_of_memory``: the computation did not fit in memory;
- ``internal_error``: anything else, a bug.

Cancellation is not a failure; the runner reports it as the job's status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from app.store import NotFound

logger = logging.getLogger("calibdash")

DATASET_DELETED_MESSAGE = "the dataset was deleted while this job ran; upload it again"
OUT_OF_MEMORY_MESSAGE = ("this computation ran out of memory; try fewer rows or features, or "
                         "a sample of the dataset")


def internal_error_message(job_id: str, error_name: str) -> str:
    """The message of a job stopped by a bug, naming where the details are."""
    return (f"an unexpected error ({error_name}) stopped this job; the server logged the "
            f"details under job {job_id}. Run it again; if it fails again, report that id.")


def failure(job_id: str, kind: str, error: Exception, *,
            dataset_deleted: Callable[[], bool] = lambda: False) -> dict[str, Any]:
    """The error a job reports for ``error``, logging what the client does not get.

    Parameters
    ----------
    job_id : str
        The job's id, given to the client and written with the log entry.
    kind : str
        The job's kind ("variables", "heterogeneity", ...), for the log.
    error : Exception
        What the job's function raised (not :class:`~app.jobs.JobCancelled` and not a
        :class:`~calibcore.exceptions.CalibrationInputError`, which say what is wrong
        themselves).
    dataset_deleted : callable, optional
        Whether a dataset the job reads is gone now. A deletion under a running job can
        surface as errors other than :class:`~app.store.NotFound` (a table file missing
        halfway through a read); when this says the dataset is gone, such an error is
        reported as the deletion rather than as a bug.

    Returns
    -------
    dict
        ``{"code", "message", "details"}`` with ``details["job_id"]``.
    """
    details: dict[str, Any] = {"job_id": job_id}
    if isinstance(error, NotFound) and error.kind == "dataset":
        logger.info("job %s (%s) stopped: dataset %s was deleted while it ran", job_id, kind,
                    error.record_id)
        return deleted_dataset_error(job_id, error.record_id)
    if isinstance(error, NotFound):
        logger.info("job %s (%s) stopped: %s", job_id, kind, error)
        return {"code": "not_found", "message": str(error),
                "details": {**details, "kind": error.kind, "id": error.record_id}}
    if isinstance(error, MemoryError):
        logger.error("job %s (%s) ran out of memory", job_id, kind, exc_info=error)
        return {"code": "out_of_memory", "message": OUT_OF_MEMORY_MESSAGE, "details": details}
    if _safely(dataset_deleted):
        # logged with its traceback all the same, in case the deletion is a coincidence
        logger.warning("job %s (%s) failed after its dataset was deleted", job_id, kind,
                       exc_info=error)
        return {"code": "dataset_deleted", "message": DATASET_DELETED_MESSAGE,
                "details": details}
    logger.error("job %s (%s) failed with an unexpected error", job_id, kind, exc_info=error)
    return {"code": "internal_error",
            "message": internal_error_message(job_id, type(error).__name__),
            "details": details}


def deleted_dataset_error(job_id: str, dataset_id: str) -> dict[str, Any]:
    """The error of a job whose dataset was deleted while it ran (or waited)."""
    return {"code": "dataset_deleted", "message": DATASET_DELETED_MESSAGE,
            "details": {"job_id": job_id, "dataset_id": dataset_id}}


def without_traceback(job_id: str, error: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored job error as clients may see it: records written by older versions of
    the server kept the traceback (and a message quoting the exception) in the error."""
    if error is None or "traceback" not in (error.get("details") or {}):
        return error
    name = str(error.get("message", "")).partition(":")[0].strip()
    return {"code": error.get("code", "internal_error"),
            "message": internal_error_message(job_id, name if name.isidentifier() else "error"),
            "details": {"job_id": job_id}}


def _safely(check: Callable[[], bool]) -> bool:
    """``check()``, False if it fails: reporting a failure must not fail itself."""
    try:
        return check()
    except Exception:
        logger.exception("could not tell whether a job's dataset was deleted")
        return False
