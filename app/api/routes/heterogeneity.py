"""Hidden heterogeneity and calibration support: both run as jobs (poll /api/v1/jobs/{id})."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.api.deps import ServicesDep
from app.schemas.models import ErrorResponse, RowCount
from app.services.heterogeneity import (
    DEFAULT_SAMPLE,
    MAX_CALIBRATION_ROWS,
    HeterogeneityParams,
    start_heterogeneity,
)
from app.services.support import SupportParams, start_support

router = APIRouter(tags=["heterogeneity"], responses={404: {"model": ErrorResponse},
                                                       422: {"model": ErrorResponse}})

_ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"description": "accepted as a job: poll GET /api/v1/jobs/{job_id}"}}
Seed = Annotated[int, Field(ge=0, le=2**32 - 1, description="seeds every random choice")]


class HeterogeneityRequest(BaseModel):
    """Parameters of hidden heterogeneity (Wagstaff & Dietterich 2023, Algorithm 1)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    radius: float = Field(default=0.1, gt=0.0, le=1.0, allow_inf_nan=False,
                          description="Hellinger radius of the probability neighbourhoods")
    sample: RowCount | Literal["all"] = Field(
        default=DEFAULT_SAMPLE,
        description="test rows to evaluate (a seeded sample), or \"all\"; HH grows 700 trees "
                    "per distinct neighbourhood, so 'all' can take minutes")
    random_state: Seed = 0
    features: list[str] | None = Field(default=None, min_length=1,
                                       description="feature columns (default: all)")
    calibration_sample: RowCount | Literal["all"] = Field(
        default=MAX_CALIBRATION_ROWS,
        description="calibration rows the local forests see (a seeded sample), or \"all\"")
    grid: Annotated[float, Field(ge=1e-6, le=1.0, strict=True)] | Literal["auto"] | None = Field(
        default="auto", description="share forests between rows whose square-root "
        "probabilities round to the same multiple of this (1e-6 to 1); null: every "
        "distinct neighbourhood exactly; \"auto\": exact unless that is many minutes of "
        "work, then radius / 10")

    @model_validator(mode="after")
    def _grid_within_radius(self) -> HeterogeneityRequest:
        if isinstance(self.grid, float) and self.grid > self.radius:
            raise ValueError(f"grid ({self.grid:g}) must not exceed the radius "
                             f"({self.radius:g}): centres would move by more than the "
                             "neighbourhoods are wide")
        return self


class SupportRequest(BaseModel):
    """Parameters of calibration support (Wagstaff & Dietterich 2023, eq. 6) and the batch to
    compare."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    batch_dataset_id: str | None = Field(
        default=None, description="another stored dataset with the same feature columns, "
                                  "compared with the calibration rows")
    random_state: Seed = 0
    n_folds: int = Field(default=5, ge=2, le=20, description="folds of the cross-fitted "
                                                             "calibration-row support")
    alpha: float = Field(default=0.01, gt=0.0, lt=0.5,
                         description="level of the two-sample KS test behind the shift warning")
    n_lowest: int = Field(default=10, ge=1, le=200, description="lowest-support rows to list")
    features: list[str] | None = Field(default=None, min_length=1,
                                       description="feature columns (default: all)")


def _accepted(job_id: str, snapshot: dict[str, Any]) -> JSONResponse:
    return JSONResponse(status_code=202, content={**snapshot, "job_id": job_id})


@router.post("/datasets/{dataset_id}/heterogeneity", status_code=202, responses=_ACCEPTED)
def create_heterogeneity(services: ServicesDep, dataset_id: str,
                         request: HeterogeneityRequest | None = None) -> JSONResponse:
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
    job = start_heterogeneity(services, dataset_id, params)
    return _accepted(job.id, job.snapshot())


@router.post("/datasets/{dataset_id}/support", status_code=202, responses=_ACCEPTED)
def create_support(services: ServicesDep, dataset_id: str,
                   request: SupportRequest | None = None) -> JSONResponse:
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
    job = start_support(services, dataset_id, params)
    return _accepted(job.id, job.snapshot())
