"""Global measures, the test of calibration, and reliability diagrams of a dataset."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Weighting(BaseModel):
    """Whether a result applies the dataset's row weights (shared by every diagnostic)."""

    weighted: bool = Field(default=False, description="the dataset's row weights were "
                           "applied (false also for a dataset without weights)")
    n_eff: float | None = Field(default=None, description="Kish's effective sample size "
                                "(sum w)^2 / sum w^2 of the rows, when weighted")
    weights_note: str | None = Field(default=None, description="'weighted (Kish n_eff = "
                                     "...)', or, on a weighted dataset, that this "
                                     "diagnostic does not apply the weights yet")


class MeasureEstimate(BaseModel):
    """One measure: the value shown, its 95% interval, the plug-in value and its meaning."""

    model_config = ConfigDict(extra="allow")

    name: str
    value: float | None = Field(description="bias-corrected for calibration errors (see "
                                "``interval``); the plug-in value otherwise")
    low: float | None
    high: float | None
    plug_in: float | None = Field(description="the measure on the rows as they are")
    consistent: bool = Field(description="a consistent calibration measure (Błasiok et al. "
                             "2023)")
    meaning: str
    note: str


class ViewTestBody(BaseModel):
    """The test of calibration in a second view, beside the headline's."""

    view: str = Field(description="top_label (binary files) or classwise (more classes)")
    statistic_name: str
    statistic: float
    p_value: float = Field(ge=0, le=1)
    n_resamples: int
    rejected: bool
    verdict: str
    summary: str
    resampling: str
    description: str


class CumulativeTestBody(ViewTestBody):
    """The KS calibration error or the Kuiper statistic of the cumulative difference
    between outcomes and scores (Gupta et al. 2021), with its consistency-resampling
    p-value in one view."""

    key: Literal["ks", "kuiper"] = Field(description="which statistic")
    null_quantile: float = Field(description="95th percentile of the statistic on labels "
                                 "drawn from the probabilities")


class CalibrationTestBody(BaseModel):
    """A test of calibration: consistency resampling (Bröcker & Smith 2007) on a
    consistent calibration measure, by default kCE, in the default view (positive for
    two classes, top label for more), checked in a second view."""

    test: str = Field(description="the test, e.g. 'consistency resampling (Bröcker & Smith "
                      "2007)'")
    statistic_name: str = Field(description="the calibration measure used as statistic")
    statistic: float = Field(description="its value on the rows")
    p_value: float = Field(ge=0, le=1, description="(1 + #{T* >= T}) / (1 + n_resamples)")
    n_resamples: int
    null_quantile: float = Field(description="95th percentile of the statistic on labels "
                                 "drawn from the probabilities (what calibration looks like)")
    n: int
    view: str = Field(description="positive for two classes, top_label for more: the "
                      "headline's view, whichever view the measures are in")
    pooled: bool = Field(description="rows pooled into cells of the score (else exact)")
    n_groups: int
    resampling: str = Field(description="how the null resamples were drawn")
    description: str = Field(description="what the test tests and why this statistic")
    level: float
    rejected: bool = Field(description="p_value <= level")
    verdict: str
    summary: str = Field(description="one line to show, with the p-value and the verdict, "
                         "and what the other view says when it disagrees")
    other_views: list[ViewTestBody] = Field(
        default_factory=list, description="the same test in a second view: top_label for "
        "two classes, classwise (Bonferroni over the classes) for more")
    views_disagree: bool = Field(default=False, description="the other view's verdict "
                                 "differs from the headline's")
    disagreement: str | None = Field(default=None, description="why the views can disagree, "
                                     "when they do")
    other_views_note: str | None = Field(default=None, description="why no second view was "
                                         "tested, when none was")
    cumulative: list[CumulativeTestBody] = Field(
        default_factory=list, description="beside the test: the KS calibration error and "
        "the Kuiper statistic with consistency-resampling p-values on the same resamples, "
        "in the positive and top-label views (top-label only for more classes)")
    cumulative_summary: str | None = Field(default=None, description="the KS and Kuiper "
                                           "tests in one line")


class MetricsResponse(Weighting):
    """Every global measure of one view with its interval, and the test of calibration."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    view: str
    subset: str
    n: int
    n_classes: int
    n_bins: int
    binning: str
    n_bootstrap: int
    confidence_level: float
    interval: str = Field(description="how the values and intervals are made")
    resampling: str = Field(description="what the bootstrap resamples")
    metrics: dict[str, float | None] = Field(description="measure -> plug-in value")
    measures: dict[str, MeasureEstimate] = Field(
        description="measure -> estimate, 95% interval, plug-in, consistency, meaning")
    calibration_test: CalibrationTestBody | None = Field(
        default=None, description="consistency-resampling test of calibration with "
        "n_bootstrap resamples; null when n_bootstrap = 0")
    sample_note: str | None = Field(default=None, description="for an external dataset: "
                                    "the sample the measures were computed on")
    exact_note: str | None = Field(default=None, description="for an external dataset: the "
                                   "measures are exact, on every row")


class BinFreeMeasure(BaseModel):
    """A measure without bins, drawn beside the binned ECE curve."""

    name: str
    value: float


class BinSensitivity(Weighting):
    """Binned ECE for 5 to 100 bins beside the bin-free consistent measures."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    view: str
    subset: str
    n: int
    n_bins: list[int] = Field(description="the bin counts of the curves")
    ece: dict[str, list[float | None]] = Field(
        description="binning (equal_width, equal_mass) -> ECE at each bin count")
    bin_free: dict[str, BinFreeMeasure] = Field(
        description="smooth_ece, smooth_calibration_error, interval_calibration_error")


class ReliabilityDiagram(BaseModel):
    """A binned reliability diagram of one binary problem; empty bins have null
    statistics."""

    model_config = ConfigDict(extra="allow")

    label: str = Field(description="which problem: 'top label', 'class 1', ...")
    edges: list[float] = Field(description="bin edges on [0, 1] (one more than the bins)")
    count: list[int] = Field(description="rows per bin")
    weight: list[float] | None = Field(default=None, description="with row weights: the "
                                       "total weight per bin (means are weighted)")
    n_eff: list[float] | None = Field(default=None, description="with row weights: Kish's "
                                      "effective sample size per bin, on which its "
                                      "interval rests")
    mean_score: list[float | None] = Field(description="mean score per bin")
    observed: list[float | None] = Field(description="observed frequency per bin")
    observed_low: list[float | None]
    observed_high: list[float | None]
    n: int
    confidence_level: float
    interval: Literal["wilson", "clopper_pearson"] = Field(
        default="wilson", description="which interval observed_low and observed_high are: "
        "Wilson's score interval or Clopper-Pearson's exact one")


class SmoothDiagram(BaseModel):
    """A smooth reliability diagram: kernel-smoothed observed frequency with a bootstrap
    band, and the density of the scores."""

    model_config = ConfigDict(extra="allow")

    label: str
    grid: list[float]
    curve: list[float | None]
    curve_low: list[float | None]
    curve_high: list[float | None]
    density: list[float | None]
    n: int
    bandwidth: float | None
    smooth_ece: float | None
    n_bootstrap: int
    confidence_level: float


class ReliabilityResponse(Weighting):
    """Binned and smooth reliability diagrams of one view (one of each per problem)."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    view: str
    subset: str
    n: int
    n_bins: int
    binning: str
    interval: Literal["wilson", "clopper_pearson"] = Field(
        default="wilson", description="the binned diagrams' per-bin interval")
    diagrams: list[ReliabilityDiagram]
    smooth: list[SmoothDiagram]
    sample_note: str | None = None
    exact_note: str | None = None
    n_binned: int | None = Field(default=None, description="for an external dataset: the "
                                 "rows the exact binned diagrams count")

