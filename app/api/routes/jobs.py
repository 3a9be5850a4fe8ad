"""Job routes: poll progress and results, cancel."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import ServicesDep
from app.api.errors import ApiError
from app.jobs.records import KEEP_RECORDS
from app.schemas.models import ErrorResponse, JobResponse

router = APIRouter(tags=["jobs"], responses={404: {"model": ErrorResponse}})


@router.get("/jobs/{job_id}", response_model=JobResponse)
def get_job(services: ServicesDep, job_id: str) -> dict[str, Any]:
    job = services.jobs.get(job_id)
    if job is None:
        raise ApiError(404, "not_found", f"no job with id {job_id!r} (the newest "
                       f"{KEEP_RECORDS} jobs are kept).")
    return job.snapshot()


@router.delete("/jobs/{job_id}", response_model=JobResponse)
def cancel_job(services: ServicesDep, job_id: str) -> dict[str, Any]:
    job = services.jobs.cancel(job_id)
    if job is None:
        raise ApiError(404, "not_found", f"no job with id {job_id!r}.")
    return job.snapshot()
