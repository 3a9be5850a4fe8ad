"""Hidden heterogeneity and calibration support (Wagstaff & Dietterich 2023): requests."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.schemas.parameters import JsonInt, RowCount, Seed
from app.services.heterogeneity import DEFAULT_SAMPLE, MAX_CALIBRATION_ROWS


class HeterogeneityRequest(BaseModel):
    """Parameters of hidden heterogeneity (Wagstaff & Dietterich 2023, Algorithm 1)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

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
        "probabilities round to the same multiple of this (1e-6 to 1, and at most the "
        "radius: a larger grid is a 422); null: every distinct neighbourhood exactly; "
        "\"auto\": exact unless that is many minutes of work, then radius / 10")

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

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    batch_dataset_id: str | None = Field(
        default=None, description="another stored dataset with the same feature columns, "
                                  "compared with the calibration rows")
    random_state: Seed = 0
    n_folds: JsonInt = Field(default=5, ge=2, le=20, description="folds of the cross-fitted "
                                                             "calibration-row support")
    alpha: float = Field(default=0.01, gt=0.0, lt=0.5,
                         description="level of the two-sample KS test behind the shift warning")
    n_lowest: JsonInt = Field(default=10, ge=1, le=200, description="lowest-support rows to list")
    features: list[str] | None = Field(default=None, min_length=1,
                                       description="feature columns (default: all)")
