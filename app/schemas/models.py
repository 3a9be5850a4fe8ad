"""Request and response models of the REST API."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app.jobs import JobStatus

#: Most rows a sample-size parameter may ask for (more than any accepted table holds by
#: default, CALIBDASH_MAX_ROWS); larger values would only mean "every row".
MAX_ROW_COUNT = 20_000_000
#: A number of rows to sample, evaluate or return.
RowCount = Annotated[int, Field(ge=1, le=MAX_ROW_COUNT)]


class ErrorBody(BaseModel):
    """The one error shape: ``{"error": {"code", "message", "details"}}``."""

    code: str = Field(description="machine-readable reason, e.g. 'probability_out_of_range'")
    message: str = Field(description="what is wrong and how to fix it")
    details: dict[str, Any] = Field(default_factory=dict,
                                    description="column, first offending rows, count, ...")


class ErrorResponse(BaseModel):
    error: ErrorBody


class RolesRequest(BaseModel):
    """Roles a user confirms for a staged upload; omitted fields keep the inferred role."""

    model_config = ConfigDict(extra="forbid")

    label: str | None = None
    probabilities: list[str] | None = None
    features: list[str] | None = None
    split: str | None = None
    id: str | None = None
    no_split: bool = False
    no_id: bool = False
    logits: bool = False
    renormalize: bool = False
    unlabeled: bool = Field(default=False, description="a batch without labels")
    time: str | None = Field(default=None, description="when each prediction was made "
                             "(dates, datetimes or an ordered number)")
    no_time: bool = False
    models: dict[str, list[str]] | None = Field(default=None, description=(
        "several models' probability columns of the same rows, by model name (at least "
        "two; the first is the dataset's probabilities unless those are given); {} for "
        "none; omitted: as inferred"))
    drop_missing: bool = Field(default=False, description=(
        "leave out the rows with a missing label or probability instead of refusing the "
        "file (counted in n_left_out and the warnings); rows missing a feature stay"))
    name: str | None = None


class ExternalDatasetRequest(BaseModel):
    """Files to register by reference, with roles (omitted roles are inferred from the
    first rows, as for an upload)."""

    model_config = ConfigDict(extra="forbid")

    uri: str = Field(min_length=1, max_length=4096, description=(
        "a path, glob or fsspec URL of Parquet (.parquet/.pq) or CSV files, or a folder "
        "of them (hive-partitioned ones too), under one of the server's "
        "CALIBDASH_EXTERNAL_ROOTS"))
    label: str | None = None
    probabilities: list[str] | None = None
    features: list[str] | None = None
    split: str | None = None
    id: str | None = None
    time: str | None = None
    logits: bool = False
    renormalize: bool = False
    name: str | None = Field(default=None, max_length=200)
    sample_rows: int | None = Field(default=None, ge=1_000, le=5_000_000, description=(
        "rows of the seeded uniform sample the per-row diagnostics run on (default: the "
        "server's CALIBDASH_EXTERNAL_SAMPLE_ROWS)"))


class DatasetSummary(BaseModel):
    """A stored dataset: size, classes, confirmed roles and warnings."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    created: str
    filename: str
    n_rows: int
    n_classes: int
    classes: list[str]
    roles: dict[str, Any]
    feature_kinds: dict[str, str]
    n_calibration: int | None
    n_test: int | None
    n_left_out: int = Field(default=0, description="rows of the file left out for a missing "
                            "label or probability (drop_missing); n_rows counts the rest")
    warnings: list[str]


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


class MetricsResponse(BaseModel):
    """Every global measure of one view with its interval, and the test of calibration."""

    model_config = ConfigDict(extra="allow")

    dataset_id: str
    view: str
    subset: str
    n: int
    n_bootstrap: int
    metrics: dict[str, Any] = Field(description="measure -> plug-in value")
    measures: dict[str, Any] = Field(description="measure -> estimate, 95% interval, "
                                     "plug-in, consistency, meaning")
    calibration_test: CalibrationTestBody | None = Field(
        default=None, description="consistency-resampling test of calibration with "
        "n_bootstrap resamples; null when n_bootstrap = 0")


class MethodRequest(BaseModel):
    """One method of a comparison, with its own parameters and feature columns."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(description="registry name, e.g. 'variable_tree'")
    params: dict[str, Any] = Field(default_factory=dict)
    features: list[str] | None = Field(
        default=None, description="feature columns for methods that use features (the "
        "variable tree: exactly one numeric column); null: all features")


class RecalibrationRequest(BaseModel):
    """Fit one recalibration method (or several with ``methods``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    method: str | None = Field(default=None, description="registry name, e.g. 'platt'")
    params: dict[str, Any] = Field(default_factory=dict)
    features: list[str] | None = Field(
        default=None, description="feature columns for methods that use features (the "
        "variable tree: exactly one numeric column); null: all features")
    methods: list[str | MethodRequest] | None = Field(
        default=None, max_length=20,
        description="several methods to compare in one job (at most 20): names, or objects "
        "with method/params/features")
    n_bins: int = Field(default=15, ge=1, le=1000)
    n_bootstrap: int = Field(default=100, ge=0, le=2000,
                             description="bootstrap resamples of the comparison's intervals")
    run_async: bool = Field(default=False, alias="async",
                            description="return 202 with a job id instead of waiting")


class JobResponse(BaseModel):
    id: str
    kind: str
    status: JobStatus = Field(description="interrupted: the server restarted while the job "
                              "ran; run it again")
    progress: float
    message: str
    detail: Any = Field(default=None, description="per-step progress, e.g. one entry per "
                        "method of a recalibration comparison")
    eta_seconds: float | None = Field(
        default=None, description="estimated seconds left while the job runs (from the time "
        "so far and the progress, smoothed); null before the progress has moved enough to "
        "tell, and once the job has ended")
    elapsed_seconds: float | None = Field(
        default=None, description="seconds since the job started running; null while "
        "queued and once it has ended")
    result: Any = None
    error: ErrorBody | None = Field(default=None, description=(
        "why a failed or interrupted job ended: e.g. 'dataset_deleted', 'out_of_memory', "
        "'internal_error' (the server logged the details under the job's id, in "
        "details.job_id), or a calibration input error's code"))
    created: str
    finished: str | None = None
    params: dict[str, Any] | None = Field(
        default=None, description="what was asked (dataset and request parameters), to run "
        "the job again")
