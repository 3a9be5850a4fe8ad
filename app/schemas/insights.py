"""Models compared on the same rows, calibration over time, and the worst-calibrated
subgroups."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.metrics import ReliabilityDiagram, Weighting
from app.schemas.parameters import JsonInt
from app.services.diagnostics import Subset
from calibcore.insights import SubgroupView


class SubgroupRequest(BaseModel):
    """What to slice by: one or two conditions on the features."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    features: list[str] | None = Field(default=None, min_length=1,
                                       description="feature columns to slice by (default: all)")
    n_bins: JsonInt = Field(default=5, ge=2, le=20,
                        description="equal-mass bins per numeric feature")
    min_support: Annotated[float, Field(gt=0.0, le=20_000_000)] | None = Field(
        default=None, description="least rows of a slice: a count (>= 1) or a fraction of "
        "the rows (< 1); default 1% of the rows and at least 100")
    pairs: bool = Field(default=True, description="also slices of two conditions on two "
                                                  "different features")
    subset: Subset = Field(default="all", description="all, calibration or test rows")
    view: SubgroupView | None = Field(default=None, description=(
        "top_label or positive; default positive for two classes, top_label for more"))


class ModelMeasure(BaseModel):
    """One measure of one model, with its 95% interval."""

    model_config = ConfigDict(extra="allow")

    name: str
    value: float | None
    low: float | None
    high: float | None
    plug_in: float | None
    consistent: bool


class ModelDifference(BaseModel):
    """A measure of one model minus the reference's, with its paired bootstrap."""

    model_config = ConfigDict(extra="allow")

    key: str
    name: str
    value: float | None = Field(description="plug-in difference (model - reference)")
    low: float | None
    high: float | None
    p_value: float | None = Field(description="two-sided bootstrap p-value of no difference")


class ComparedModel(BaseModel):
    """One model of the comparison."""

    model_config = ConfigDict(extra="allow")

    name: str
    columns: list[str] = Field(description="its probability columns")
    measures: dict[str, ModelMeasure]
    differences: dict[str, ModelDifference] = Field(
        description="measure -> difference to the reference (empty for the reference)")
    reliability: ReliabilityDiagram


class ModelComparison(Weighting):
    """Several models' probabilities of the same rows, each measure per model with its
    interval and each model's paired difference to the reference."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    reference: str
    view: str
    diagram_view: str = Field(description="the view of the diagrams (top_label for a "
                              "classwise comparison)")
    n: int
    n_bootstrap: int
    confidence_level: float
    models: list[ComparedModel]
    note: str
    sample_note: str | None = None


class TimelineWindow(BaseModel):
    """One window of the timeline; estimates are null below the least rows a window
    needs."""

    model_config = ConfigDict(extra="allow")

    label: str = Field(description="the period (2026-03, 2026-03-02/2026-03-08) or value "
                       "range")
    start: str
    end: str
    n: int
    accuracy: float | None
    accuracy_low: float | None
    accuracy_high: float | None
    mean_confidence: float | None
    mean_score: float | None = Field(description="the view's mean score")
    observed_rate: float | None = Field(description="the frequency of the view's outcome")
    observed_rate_low: float | None
    observed_rate_high: float | None
    gap: float | None = Field(description="mean_score - observed_rate")
    ece: float | None
    ece_low: float | None
    ece_high: float | None
    smooth_ece: float | None
    smooth_ece_low: float | None
    smooth_ece_high: float | None
    p_value: float | None = Field(description="the test of this window's gap against the "
                                  "reference's; null for the reference")
    p_adjusted: float | None = Field(description="Holm-adjusted p_value")
    flagged: bool = Field(description="p_adjusted < alpha")
    changed_views: list[str]


class RollingWindow(BaseModel):
    """A recalibrator fitted on one window, scored on the next."""

    model_config = ConfigDict(extra="allow")

    window: int
    fitted_on: int
    nll_before: float | None
    nll_after: float | None
    ece_before: float | None
    ece_after: float | None


class RollingRecalibration(BaseModel):
    """What a model recalibrated on last period's data would have scored."""

    model_config = ConfigDict(extra="allow")

    method: str
    windows: list[RollingWindow]
    note: str


class Timeline(Weighting):
    """Calibration over time: measures per window, the change test against the reference
    window, and the rolling recalibration."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    time: str = Field(description="the time column")
    period: str
    reference: int = Field(description="index of the reference window")
    view: str
    alpha: float
    test: str = Field(description="which change test, and why")
    notes: list[str]
    windows: list[TimelineWindow]
    rolling: RollingRecalibration
