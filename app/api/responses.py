"""What the routes answer besides success: the error envelope per status, and jobs (202).

Each router documents the errors its routes raise (404, 422) with these (the 409 of an
operation on a stored resource is added by :mod:`app.api.openapi`); the errors the
gate in front of every route answers (400, 401, 403, 413: :mod:`app.security`) are added
to every operation by :mod:`app.api.openapi`.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

from app.jobs import Job
from app.schemas import ErrorResponse, JobAccepted

Responses = dict[int | str, dict[str, Any]]


def error(status: int, description: str) -> Responses:
    """``status`` answered with the error envelope, and when."""
    return {status: {"model": ErrorResponse, "description": description}}


NOT_FOUND = error(404, "No such dataset (or job, recalibration, model, upload): "
                       "`error.details` names its kind and id.")
INVALID = error(422, "Invalid parameters (`invalid_request`, `error.details.problems` lists "
                     "them), or data the computation cannot use: `error.code` says which.")
#: A computation started as a job.
ACCEPTED: Responses = {202: {"model": JobAccepted, "description": (
    "Accepted as a job: poll `GET /api/v1/jobs/{job_id}` until `status` is `succeeded`; "
    "its `result` is the answer.")}}


def job_accepted(job: Job) -> dict[str, Any]:
    """The 202 body of a job: its state and its id as ``job_id``."""
    return {**job.snapshot(), "job_id": job.id}


def job_accepted_response(job: Job) -> JSONResponse:
    """A 202 from a route whose other answer is a 200 or 201."""
    body = JobAccepted.model_validate(job_accepted(job)).model_dump(mode="json")
    return JSONResponse(status_code=202, content=body)
