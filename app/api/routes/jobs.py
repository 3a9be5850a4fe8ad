"""Job routes: poll progress and results, cancel."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import ServicesDep
from app.api.errors import ApiError
from app.api.responses import NOT_FOUND
from app.jobs.records import KEEP_RECORDS
from app.schemas import JobResponse

router = APIRouter(prefix="/jobs", tags=["jobs"], responses=NOT_FOUND)


@router.get("/{job_id}", response_model=JobResponse)
def get_job(services: ServicesDep, job_id: str) -> dict[str, Any]:
    """A job's progress, and its result or error once it has ended."""
    job = services.jobs.get(job_id)
    if job is None:
        raise ApiError(404, "not_found", f"no job with id {job_id!r} (the newest "
                       f"{KEEP_RECORDS} jobs are kept).")
    return job.snapshot()


@router.delete("/{job_id}", response_model=JobResponse)
def cancel_job(services: ServicesDep, job_id: str) -> dict[str, Any]:
    """Cancel a queued or running job (an ended one is left as it is); its state."""
    job = services.jobs.cancel(job_id)
    if job is None:
        raise ApiError(404, "not_found", f"no job with id {job_id!r}.")
    return job.snapshot()
