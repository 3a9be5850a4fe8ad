"""Hidden heterogeneity (Wagstaff & Dietterich 2023): a job (poll /api/v1/jobs/{id})."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import ServicesDep
from app.api.responses import ACCEPTED, INVALID, NOT_FOUND, error, job_accepted
from app.schemas import HeterogeneityRequest, JobAccepted
from app.services.heterogeneity import HeterogeneityParams, start_heterogeneity

router = APIRouter(prefix="/datasets/{dataset_id}/heterogeneity", tags=["heterogeneity"],
                   responses={**NOT_FOUND, **INVALID})


@router.post("", status_code=202, response_model=JobAccepted, responses={**ACCEPTED, **error(
    422, "Invalid parameters (a `grid` larger than the `radius` too), or ones this dataset "
         "cannot serve: unknown feature columns, no features, no test rows; `error.code` "
         "says which.")})
def create_heterogeneity(services: ServicesDep, dataset_id: str,
                         request: HeterogeneityRequest | None = None) -> dict[str, Any]:
    """Per-row hidden heterogeneity of test rows, mean HH and the local-vs-global advice.

    The job's result: ``rows`` (row position, id, HH, neighbourhood size, confidence, 2-D
    map position), ``mean_hh``, ``recommendation``, ``notes``. Cached per parameter set;
    the values are saved as the per-row column ``hh``.
    """
    request = request or HeterogeneityRequest()
    params = HeterogeneityParams(
        radius=request.radius, sample=None if request.sample == "all" else request.sample,
        random_state=request.random_state,
        features=None if request.features is None else tuple(request.features),
        calibration_sample=(None if request.calibration_sample == "all"
                            else request.calibration_sample),
        grid=request.grid)
    return job_accepted(start_heterogeneity(services, dataset_id, params))
