"""Background jobs: their state while they run, and their result or error once ended."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.jobs import JobStatus
from app.schemas.errors import ErrorBody


class JobEstimate(BaseModel):
    """The cost estimate said before a job started."""

    seconds: float = Field(ge=0, description="the point estimate, in seconds")
    low: float = Field(ge=0, description="the least seconds the fitted cost model expects")
    high: float = Field(ge=0, description="the most seconds the fitted cost model expects")
    text: str = Field(description="the estimate in words: a point ('about 40 s') or, when "
                      "the model is not trusted within a factor of two, a range "
                      "('20 s - 1 min')")
    basis: str = Field(description="the work counted")
    cheaper: str | None = Field(default=None, description="a cheaper setting, in words")
    long: bool = Field(description="over a minute")


class JobResponse(BaseModel):
    """A job's state; ``result`` is the route's answer once ``status`` is ``succeeded``."""

    id: str
    kind: str = Field(description="what the job computes, e.g. 'lce', 'heterogeneity', "
                      "'recalibration'")
    status: JobStatus = Field(description="interrupted: the server restarted while the job "
                              "ran; run it again")
    progress: float = Field(ge=0, le=1, description="fraction done")
    message: str
    detail: Any = Field(default=None, description="per-step progress, e.g. one entry per "
                        "method of a recalibration comparison")
    eta_seconds: float | None = Field(
        default=None, description="estimated seconds left while the job runs (from the time "
        "so far and the progress, smoothed); null before the progress has moved enough to "
        "tell, and once the job has ended")
    elapsed_seconds: float | None = Field(
        default=None, description="seconds since the job started running; null while "
        "queued and once it has ended")
    result: Any = Field(default=None, description="the computation's result once the job "
                        "succeeded (its route's documentation describes it), else null")
    error: ErrorBody | None = Field(default=None, description=(
        "why a failed or interrupted job ended: e.g. 'dataset_deleted', 'out_of_memory', "
        "'internal_error' (the server logged the details under the job's id, in "
        "details.job_id), or a calibration input error's code"))
    created: str
    finished: str | None = None
    params: dict[str, Any] | None = Field(
        default=None, description="what was asked (dataset and request parameters), to run "
        "the job again")
    estimate: JobEstimate | None = Field(
        default=None, description="what the job was estimated to take before it started "
        "(null for a job without a cost model)")


class JobAccepted(JobResponse):
    """A computation accepted as a job (202): poll ``GET /api/v1/jobs/{job_id}``."""

    job_id: str = Field(description="the job's id (the same as ``id``)")
