"""Calibration support (Wagstaff & Dietterich 2023, eq. 6): a job (poll /api/v1/jobs/{id})."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import ServicesDep
from app.api.responses import ACCEPTED, INVALID, NOT_FOUND, error, job_accepted
from app.schemas import JobAccepted, SupportRequest
from app.services.support import SupportParams, start_support

router = APIRouter(prefix="/datasets/{dataset_id}/support", tags=["support"],
                   responses={**NOT_FOUND, **INVALID})


@router.post("", status_code=202, response_model=JobAccepted, responses={**ACCEPTED, **error(
    422, "Invalid parameters, or ones these datasets cannot serve: unknown feature "
         "columns, a batch that is this dataset or lacks its feature columns, too few "
         "calibration rows for the folds; `error.code` says which.")})
def create_support(services: ServicesDep, dataset_id: str,
                   request: SupportRequest | None = None) -> dict[str, Any]:
    """Calibration support per row, its histogram, the lowest-support rows and shift tests.

    The job's result: ``calibration`` (cross-fitted support) and ``test`` rows,
    ``histogram``, ``lowest``, ``test_shift`` and, with a batch, ``batch`` (its support,
    KS test and shift warning). Saved as the per-row column ``support``.
    """
    request = request or SupportRequest()
    params = SupportParams(
        batch_dataset_id=request.batch_dataset_id, random_state=request.random_state,
        n_folds=request.n_folds, alpha=request.alpha, n_lowest=request.n_lowest,
        features=None if request.features is None else tuple(request.features))
    return job_accepted(start_support(services, dataset_id, params))
