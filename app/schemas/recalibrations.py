"""Recalibration: fitting requests, fitted recalibrators, and their held-out comparison."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.schemas.decision import RecalibrationNetBenefit
from app.schemas.metrics import ReliabilityDiagram, Weighting
from app.schemas.parameters import JsonInt
from calibcore.recalibration import REGISTRY

#: A registered recalibration method; the schema lists them, the server refuses others
#: with a 422 ``unknown_method``.
MethodName = Annotated[str, Field(json_schema_extra={"enum": sorted(REGISTRY)})]
_FEATURES = ("feature columns for methods that use features (the variable tree: exactly one "
             "numeric column); null: all features")


class MethodRequest(BaseModel):
    """One method of a comparison, with its own parameters and feature columns."""

    model_config = ConfigDict(extra="forbid", strict=True)

    method: MethodName = Field(description="registry name, e.g. 'variable_tree'")
    params: dict[str, Any] = Field(default_factory=dict, description=(
        "the method's parameters (GET /api/v1/methods lists them with their defaults); "
        "unknown names or values out of range are a 422"))
    features: list[str] | None = Field(default=None, min_length=1, description=_FEATURES)


def _method_or_methods(schema: dict[str, Any]) -> None:
    schema["anyOf"] = [{"required": ["method"], "properties": {"method": {"type": "string"}}},
                       {"required": ["methods"], "properties": {"methods": {"type": "array"}}}]


class RecalibrationRequest(BaseModel):
    """Fit one recalibration method (``method``) or several (``methods``)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False,
                              json_schema_extra=_method_or_methods)

    method: MethodName | None = Field(default=None, description="registry name, e.g. 'platt'")
    params: dict[str, Any] = Field(default_factory=dict, description=(
        "the method's parameters, or with `methods` given as names, each method's "
        "parameters by name; unknown names or values out of range are a 422"))
    features: list[str] | None = Field(default=None, min_length=1, description=_FEATURES)
    methods: list[MethodName | MethodRequest] | None = Field(
        default=None, min_length=1, max_length=20,
        description="several methods to compare in one job (at most 20): names, or objects "
        "with method/params/features")
    n_bins: JsonInt = Field(default=15, ge=1, le=1000)
    n_bootstrap: JsonInt = Field(default=100, ge=0, le=2000,
                             description="bootstrap resamples of the comparison's intervals")
    thresholds: list[Annotated[float, Field(gt=0.0, lt=1.0)]] = Field(
        default=[0.1, 0.2, 0.3], min_length=1, max_length=200, description=(
            "decision thresholds at which each method's net benefit on the held-out rows "
            "is compared with the uncalibrated model's (increasing, in (0, 1))"))
    run_async: bool = Field(default=False, alias="async",
                            description="return 202 with a job id instead of waiting")

    @model_validator(mode="after")
    def _something_to_fit(self) -> RecalibrationRequest:
        if self.method is None and self.methods is None:
            raise ValueError("give 'method' (e.g. \"platt\") or 'methods' (a list) to fit")
        return self


class MethodInfo(BaseModel):
    """A registered recalibration method."""

    method: str = Field(description="registry name")
    name: str = Field(description="display name")
    needs_features: bool
    features: str | None = Field(description="which feature columns it uses, when it does")
    params: dict[str, Any] = Field(description="default parameters")
    supports_weights: bool = Field(default=False, description="fit takes the dataset's row "
                                   "weights (the others fit every row once and say so)")


class Recalibration(Weighting):
    """A fitted recalibrator: what was fitted, how it was scored, and the held-out measures
    before and after."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    created: str
    dataset_id: str
    method: str
    params: dict[str, Any]
    features: list[str]
    feature_notes: list[str]
    scheme: str = Field(description="which rows it was fitted on and which scored it")
    cross_fitted: bool = Field(description="scored with cross-fitting (no split column)")
    n_heldout: int
    before: dict[str, float | None] = Field(description="measure -> value on the held-out "
                                            "rows, uncalibrated")
    after: dict[str, float | None] = Field(description="the same, recalibrated")
    reliability_before: ReliabilityDiagram
    reliability_after: ReliabilityDiagram
    interval_width: float | None = Field(default=None, description=(
        "Venn-Abers only: the mean width p1 - p0 of the probability intervals on the "
        "held-out rows, averaged over classes (each row's are the download's p0_<class> "
        "and p1_<class> columns)"))
    seconds: float


class ComparisonColumn(BaseModel):
    """A column of the comparison table."""

    key: str
    label: str
    better: Literal["lower", "higher"]
    meaning: str


class ComparisonValue(BaseModel):
    """One cell: a value with its interval (null for maxima, which have none)."""

    model_config = ConfigDict(extra="allow")

    value: float | None
    low: float | None
    high: float | None
    plug_in: float | None = None
    note: str = ""


class ComparisonRow(BaseModel):
    """One candidate of the comparison: the uncalibrated probabilities or a recalibration."""

    model_config = ConfigDict(extra="allow")

    id: str | None = Field(description="the recalibration; null for the uncalibrated row")
    name: str
    method: str | None
    values: dict[str, ComparisonValue] = Field(description="column key -> cell")
    best: list[str] = Field(default_factory=list, description="the columns this row is best in")


class NllDifference(BaseModel):
    """Paired held-out NLL differences of one recalibration: [estimate, low, high]."""

    model_config = ConfigDict(extra="allow")

    id: str | None
    name: str
    nll_minus_uncalibrated: list[float | None]
    nll_minus_best: list[float | None]


class Recommendation(BaseModel):
    """Which probabilities to use, and why."""

    model_config = ConfigDict(extra="allow")

    id: str | None
    name: str | None
    keep_uncalibrated: bool
    differences: list[NllDifference]
    reasons: list[str]


class CandidateDiagram(BaseModel):
    """The held-out reliability diagram of one candidate."""

    id: str | None
    name: str
    diagram: ReliabilityDiagram


class RecalibrationComparison(Weighting):
    """Recalibrations of one dataset compared on its held-out rows."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    scheme: str
    positive_class: str | None = Field(description="class 1 of a binary problem, else null")
    n: int
    n_bootstrap: int
    confidence_level: float
    columns: list[ComparisonColumn]
    rows: list[ComparisonRow]
    mlce_note: str | None
    mlce_gamma: float | None
    mlce_space: str | None
    recommendation: Recommendation
    reliability: list[CandidateDiagram] = Field(description="top-label diagrams")
    positive_reliability: list[CandidateDiagram] | None = Field(
        description="diagrams of P(class 1), for binary problems")


class FittedRecalibration(Recalibration):
    """One method fitted (``method``), with its comparison against the uncalibrated
    probabilities."""

    comparison: RecalibrationComparison
    net_benefit: RecalibrationNetBenefit | None = Field(
        default=None, description="net benefit on the held-out rows at `thresholds`, "
        "beside the uncalibrated model's, with the paired interval of the difference")


class FailedMethod(BaseModel):
    """A method of a batch that could not be fitted on this data."""

    model_config = ConfigDict(extra="allow")

    method: str
    code: str
    message: str


class RecalibrationBatch(BaseModel):
    """Several methods fitted (``methods``) and compared."""

    model_config = ConfigDict(extra="allow")

    recalibrations: list[Recalibration]
    comparison: RecalibrationComparison
    failed: list[FailedMethod] = Field(description="methods that failed; the others went on")
    net_benefit: RecalibrationNetBenefit | None = Field(
        default=None, description="net benefit on the held-out rows at `thresholds`, "
        "beside the uncalibrated model's, with the paired interval of the difference")
