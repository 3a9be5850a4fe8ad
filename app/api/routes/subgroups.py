"""The worst-calibrated subgroups: a job (poll /api/v1/jobs/{id})."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import ServicesDep
from app.api.responses import ACCEPTED, INVALID, NOT_FOUND, error, job_accepted
from app.schemas import JobAccepted, SubgroupRequest
from app.services.subgroups import SubgroupParams, start_subgroups

router = APIRouter(prefix="/datasets/{dataset_id}/subgroups", tags=["subgroups"],
                   responses={**NOT_FOUND, **INVALID})


@router.post("", status_code=202, response_model=JobAccepted, responses={**ACCEPTED, **error(
    422, "Invalid parameters, or ones this dataset cannot serve: unknown feature columns, "
         "no features, a positive view of more than two classes, calibration or test rows "
         "without a split column; `error.code` says which.")})
def create_subgroups(services: ServicesDep, dataset_id: str,
                     request: SubgroupRequest | None = None) -> dict[str, Any]:
    """The worst-calibrated slices: one or two conditions on the features (categorical
    levels, numeric quantile bins, missing), at least ``min_support`` rows, ranked by
    |mean confidence - accuracy| with a t interval, the t test's p-value and its
    Benjamini-Hochberg adjustment over every slice tried.

    The job's result: ``subgroups`` (the worst 200: ``slice``, ``conditions``, ``n``,
    ``support``, ``mean_confidence``, ``accuracy``, ``gap`` with ``gap_low``/``gap_high``,
    ``p_value``, ``p_adjusted``, ``smooth_ece`` for the first 50), ``n_tried``,
    ``diagrams`` (10-bin reliability diagrams of the first 50) and ``whole`` (the whole
    data's). Cached per parameter set. On the positive view by default for two classes,
    the top label for more.
    """
    request = request or SubgroupRequest()
    params = SubgroupParams(
        features=None if request.features is None else tuple(request.features),
        n_bins=request.n_bins, min_support=request.min_support, pairs=request.pairs,
        subset=request.subset, view=request.view)
    return job_accepted(start_subgroups(services, dataset_id, params))
