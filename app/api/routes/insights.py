"""What no peer has: models compared on the same rows, the worst-calibrated subgroups (a
job: poll /api/v1/jobs/{id}) and calibration over time. Each is on a view whose default
is the positive one for two classes (P(class 1) against the frequency of class 1: the
top-label view can fold over- and under-prediction of class 1 into zero), the top label
for more."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import ServicesDep
from app.schemas.models import ErrorResponse
from app.services.diagnostics import Subset
from app.services.models_compare import compare_for
from app.services.subgroups import SubgroupParams, start_subgroups
from app.services.timeline import timeline_for
from calibcore.subgroups import SubgroupView
from calibcore.timeline import Frequency, TimelineView
from calibcore.views import View

router = APIRouter(tags=["compare, subgroups, timeline"], responses={404: {"model": ErrorResponse},
                                                   422: {"model": ErrorResponse}})


class SubgroupRequest(BaseModel):
    """What to slice by: one or two conditions on the features."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    features: list[str] | None = Field(default=None, min_length=1,
                                       description="feature columns to slice by (default: all)")
    n_bins: int = Field(default=5, ge=2, le=20,
                        description="equal-mass bins per numeric feature")
    min_support: Annotated[float, Field(gt=0.0, le=20_000_000)] | None = Field(
        default=None, description="least rows of a slice: a count (>= 1) or a fraction of "
        "the rows (< 1); default 1% of the rows and at least 100")
    pairs: bool = Field(default=True, description="also slices of two conditions on two "
                                                  "different features")
    subset: Subset = Field(default="all", description="all, calibration or test rows")
    view: SubgroupView | None = Field(default=None, description=(
        "top_label or positive; default positive for two classes, top_label for more"))


@router.post("/datasets/{dataset_id}/subgroups", status_code=202, responses={
    202: {"description": "accepted as a job: poll GET /api/v1/jobs/{job_id}"}})
def create_subgroups(services: ServicesDep, dataset_id: str,
                     request: SubgroupRequest | None = None) -> JSONResponse:
    """The worst-calibrated slices: one or two conditions on the features (categorical
    levels, numeric quantile bins, missing), at least ``min_support`` rows, ranked by
    |mean confidence - accuracy| with a t interval, the t test's p-value and its
    Benjamini-Hochberg adjustment over every slice tried.

    The job's result: ``subgroups`` (the worst 200: ``slice``, ``conditions``, ``n``,
    ``support``, ``mean_confidence``, ``accuracy``, ``gap`` with ``gap_low``/``gap_high``,
    ``p_value``, ``p_adjusted``, ``smooth_ece`` for the first 50), ``n_tried``,
    ``diagrams`` (10-bin reliability diagrams of the first 50) and ``whole`` (the whole
    data's). Cached per parameter set.
    """
    request = request or SubgroupRequest()
    params = SubgroupParams(
        features=None if request.features is None else tuple(request.features),
        n_bins=request.n_bins, min_support=request.min_support, pairs=request.pairs,
        subset=request.subset, view=request.view)
    job = start_subgroups(services, dataset_id, params)
    return JSONResponse(status_code=202, content={**job.snapshot(), "job_id": job.id})


@router.get("/datasets/{dataset_id}/timeline")
def get_timeline(
        services: ServicesDep, dataset_id: str,
        freq: Annotated[Frequency, Query(description="auto, D, W, M, Q or Y (dates)")] = "auto",
        reference: Annotated[int, Query(ge=0, le=10_000,
                                        description="index of the reference window")] = 0,
        method: Annotated[str, Query(description="recalibrator fitted on each window and "
                                                 "scored on the next")] = "temperature",
        time: Annotated[str | None, Query(description="time column (default: the "
                                                      "dataset's time role)")] = None,
        view: Annotated[TimelineView | None, Query(description=(
            "top_label or positive; default positive for two classes, top_label for "
            "more"))] = None,
) -> dict[str, Any]:
    """Calibration over time: per window n, accuracy, mean confidence, gap, ECE and smooth
    ECE with 95% intervals; the change test of each window's gap against the reference
    window (Welch, Holm-adjusted; ``test`` says which and why) with
    ``flagged`` windows; and ``rolling``: the recalibrator fitted on each window, scored
    on the next. Cached per parameter set."""
    return timeline_for(services, dataset_id, freq=freq, reference=reference, method=method,
                        time=time, view=view)


@router.get("/datasets/{dataset_id}/compare")
def get_comparison(
        services: ServicesDep, dataset_id: str,
        reference: Annotated[str | None, Query(max_length=200, description=(
            "the model the others are compared with (default: the first)"))] = None,
        n_bootstrap: Annotated[int, Query(ge=0, le=2000)] = 200,
        view: Annotated[View | None, Query(description=(
            "top_label, positive or classwise; default positive for two classes, "
            "top_label for more"))] = None) -> dict[str, Any]:
    """Several models' probabilities of the same rows (columns grouped per model, e.g.
    gbm_proba_0, gbm_proba_1, lr_proba_0, ...): every measure per model with its 95%
    interval, and each model's difference to ``reference`` with a paired-bootstrap
    interval and p-value (the rows are shared, so the resamples are too), plus each
    model's binned reliability diagram. Cached per parameter set."""
    return compare_for(services, dataset_id, reference=reference, n_bootstrap=n_bootstrap,
                       view=view)
