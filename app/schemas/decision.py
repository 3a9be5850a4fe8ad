"""Decision curves: the model's net benefit beside treat all and treat none, and the net
benefit of recalibrations on held-out rows."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.metrics import Weighting


class NetBenefitCurves(BaseModel):
    """Net benefit at each threshold of the three strategies."""

    model: list[float] = Field(description="treat the rows with P(event) >= threshold")
    treat_all: list[float] = Field(description="treat every row: prevalence - (1 - "
                                   "prevalence) t / (1 - t)")
    treat_none: list[float] = Field(description="treat no row: 0")


class Band(BaseModel):
    """A pointwise bootstrap band (nulls without resamples)."""

    lower: list[float | None]
    upper: list[float | None]


class DecisionBands(BaseModel):
    model: Band


class DecisionCurve(Weighting):
    """Net benefit (Vickers & Elkin 2006) at each threshold, with the model's band."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    subset: str
    thresholds: list[float] = Field(description="increasing, in (0, 1)")
    net_benefit: NetBenefitCurves
    bands: DecisionBands
    beats_both: list[bool | None] = Field(
        description="per threshold, whether the model's band lies above treat all and "
        "treat none (null without a band)")
    n: int = Field(description="rows")
    prevalence: float = Field(description="frequency of the event (the positive class)")
    positive_class: str = Field(description="the class whose probability is thresholded")
    n_bootstrap: int
    confidence_level: float
    notes: list[str]


class RecalibratedNetBenefit(BaseModel):
    """One recalibration's net benefit on the held-out rows, and its change."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    method: str
    net_benefit: list[float]
    difference: list[float] = Field(description="recalibrated - uncalibrated net benefit")
    lower: list[float | None] = Field(description="paired bootstrap 95% interval of the "
                                      "difference")
    upper: list[float | None]
    changed: list[float] = Field(description="fraction of the held-out rows treated by one "
                                 "of the two and not the other")
    difference_excludes_zero: list[bool | None] = Field(
        description="whether the interval of the difference excludes 0")


class RecalibrationNetBenefit(Weighting):
    """Does recalibration change what one would do? Net benefit on the held-out rows."""

    model_config = ConfigDict(extra="allow")

    thresholds: list[float]
    n: int
    prevalence: float
    positive_class: str
    uncalibrated: list[float]
    treat_all: list[float]
    methods: list[RecalibratedNetBenefit]
    n_bootstrap: int
    scheme: str
    note: str
