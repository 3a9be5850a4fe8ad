"""The clinical calibration report: the quantities with their 95% intervals, the flexible
calibration curve and the level of the calibration hierarchy."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.metrics import Weighting


class ClinicalEstimate(BaseModel):
    """A value, with its 95% interval where the quantity has one."""

    model_config = ConfigDict(extra="forbid")

    value: float | None
    lower: float | None = Field(default=None, description="lower end of the 95% interval")
    upper: float | None = Field(default=None, description="upper end of the 95% interval")


class HosmerLemeshowBody(BaseModel):
    """The Hosmer-Lemeshow statistic over risk groups at the deciles of p, with its caveat."""

    model_config = ConfigDict(extra="forbid")

    value: float | None = Field(description="the statistic")
    df: int = Field(description="groups - 2")
    p_value: float | None
    n_groups: int
    observed: list[float] = Field(description="events per group")
    expected: list[float] = Field(description="summed p per group")
    sizes: list[float] = Field(description="rows per group (their total weight on a "
                                           "weighted dataset)")
    caveat: str


class Histogram(BaseModel):
    """Counts of the predicted probabilities in equal-width bins of [0, 1]."""

    model_config = ConfigDict(extra="forbid")

    edges: list[float]
    counts: list[int]


class FlexibleCurveBody(BaseModel):
    """The lowess calibration curve at its anchors, with its bands."""

    model_config = ConfigDict(extra="forbid")

    predicted: list[float] = Field(description="predicted probability at each anchor")
    observed: list[float] = Field(description="the curve: observed proportion")
    lower: list[float] = Field(description="pointwise 95% band")
    upper: list[float]
    standard_error: list[float]
    simultaneous: float | None = Field(description=(
        "multiplier of standard_error giving the simultaneous 95% band that judges the "
        "moderate level"))
    judged_range: list[float] = Field(description="1st and 99th percentiles of p")
    span: float
    delta: float
    histogram: Histogram


class CalibrationLevel(BaseModel):
    """One level of Van Calster et al.'s calibration hierarchy."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="mean, weak or moderate")
    met: bool = Field(description="the data are consistent with it (its intervals hold "
                                  "the perfect values)")
    reason: str


class ClinicalReport(Weighting):
    """The clinical calibration report of P(target) (one class against the rest for more
    than two classes)."""

    model_config = ConfigDict(extra="forbid")

    dataset_id: str
    name: str
    subset: str
    rows: str
    classes: list[str]
    target: str = Field(description="the class whose probability is judged")
    problem: str
    n: int
    n_events: int
    n_logistic: int = Field(description="rows of the logistic fits (p strictly inside (0, 1))")
    oe_ratio: ClinicalEstimate
    calibration_in_the_large: ClinicalEstimate
    calibration_intercept: ClinicalEstimate
    calibration_slope: ClinicalEstimate
    spiegelhalter_z: ClinicalEstimate
    spiegelhalter_p: ClinicalEstimate
    ici: ClinicalEstimate
    e50: ClinicalEstimate
    e90: ClinicalEstimate
    emax: ClinicalEstimate
    hosmer_lemeshow: HosmerLemeshowBody
    curve: FlexibleCurveBody
    levels: list[CalibrationLevel]
    verdict: str
    notes: list[str]
    conventions: dict[str, str] = Field(description="how each quantity is computed")
    total_weight: float | None = Field(default=None, description=(
        "sum of the row weights (weighted dataset)"))
    events_weight: float | None = Field(default=None, description=(
        "sum of the events' row weights (weighted dataset)"))
    unweighted: list[str] = Field(default_factory=list, description=(
        "on a weighted dataset, the quantities computed on the rows unweighted (lowess "
        "takes no weights): curve, ici, e50, e90, emax"))
    unweighted_note: str | None = Field(default=None, description=(
        "why those quantities are unweighted, on a weighted dataset"))
