"""Variable-based calibration (Kelly & Smyth 2023): the VECE ranking and one variable."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.metrics import Weighting

#: A value of a variable: a number, or a category as the file holds it.
VariableValue = str | int | float | bool | None


class RankedVariable(BaseModel):
    """One feature in the ranking."""

    model_config = ConfigDict(extra="allow")

    variable: str
    kind: Literal["numeric", "categorical"]
    vece: float | None = Field(description="variable-based expected calibration error")
    vce_max: float | None = Field(description="VCE(v*): the largest gap between the error "
                                  "and predicted-error curves (or of a category)")
    v_star: VariableValue = Field(description="where that gap is: a value or a category")
    p_value: float | None = Field(description="seeded permutation p-value; null without "
                                  "permutations")
    n: int = Field(description="rows used")
    n_missing: int = Field(description="rows left out as missing")
    significant: bool | None = Field(description="p_value below significance_level")


class VariableRanking(Weighting):
    """Every feature ranked by VECE, descending."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    n_bins: int
    n_permutations: int
    span: float
    n_points: int
    subset: str
    random_state: int
    view: str
    n: int = Field(description="rows in the subset")
    significance_level: float
    min_p_value: float | None = Field(description="the smallest p-value the permutations "
                                      "can give")
    variables: list[RankedVariable]
    cached: bool = Field(description="served from the cache")


class VariableBins(BaseModel):
    """The bins behind VECE (equal-mass over a numeric variable, one per category),
    as columns of equal length."""

    model_config = ConfigDict(extra="allow")

    bin: list[VariableValue] = Field(description="an interval label, or the category")
    left: list[float | None] = Field(description="bin edges; null for categories")
    right: list[float | None]
    n: list[int]
    error: list[float | None]
    error_low: list[float | None] = Field(description="Wilson 95% interval of the error")
    error_high: list[float | None]
    predicted_error: list[float | None]
    predicted_error_low: list[float | None] = Field(description="t 95% interval of the "
                                                    "mean predicted error")
    predicted_error_high: list[float | None]
    gap: list[float | None] = Field(description="error - predicted error (positive: "
                                    "over-confident)")
    weight: list[float] | None = Field(default=None, description="weighted dataset: each "
                                       "bin's total row weight (the bins hold equal shares)")
    n_eff: list[float] | None = Field(default=None, description="weighted dataset: each "
                                      "bin's Kish effective size (sum w)^2 / sum w^2, on which "
                                      "its intervals are computed")


class VariableCurves(BaseModel):
    """LOESS curves of the error and the predicted error against a numeric variable, with
    95% pointwise bands, and the variable's histogram."""

    model_config = ConfigDict(extra="allow")

    x: list[float | None]
    error: list[float | None]
    error_low: list[float | None]
    error_high: list[float | None]
    predicted_error: list[float | None]
    predicted_error_low: list[float | None]
    predicted_error_high: list[float | None]
    vce_max: float | None
    v_star: float | None
    n: int
    n_missing: int
    span: float
    confidence_level: float
    histogram_edges: list[float | None]
    histogram_counts: list[int]
    exact: bool
    curve_range: str
    gaps: list[list[float]] = Field(
        default_factory=list,
        description="gaps of the variable [a, b] (consecutive values, no row between, wider "
                    "than twice the smaller LOESS window half-width at a and b) holding "
                    "evaluation points: the curves are null strictly inside them and v* is "
                    "never there")


class VariableDetail(Weighting):
    """Calibration along one variable: its bins, and its curves when it is numeric."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    variable: str
    kind: Literal["numeric", "categorical"]
    subset: str
    view: str
    n: int
    n_missing: int
    n_bins: int
    span: float
    curve_range: str
    vece: float | None
    bins: VariableBins
    curves: VariableCurves | None = Field(description="null for a categorical variable")
    vce_max: float | None
    v_star: VariableValue
