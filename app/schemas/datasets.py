"""Datasets: uploads (staged or direct), external files by reference, their summaries."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.parameters import WHOLE_NUMBER


class RowWeightFields(BaseModel):
    """The row weights a request may name: an upload's roles and an external registration
    take them alike (the exact report of external files sums weights instead of counting
    rows)."""

    weight: str | None = Field(default=None, max_length=1000, description=(
        "row weights (survey, importance or downsampling weights): non-negative numbers, "
        "not all zero; omitted: a column named weight, weights, sample_weight or "
        "sample_weights, if any"))
    no_weight: bool = Field(default=False, description="no weight column, even if one is "
                            "inferred")
    negative_rate: Annotated[float, Field(gt=0, le=1)] | None = Field(
        default=None, description=(
            "the fraction of negatives a sampled log kept (every positive kept): its "
            "negatives weigh 1 / negative_rate (times the weight column, if any); binary "
            "labels only"))


class RolesRequest(RowWeightFields):
    """Roles a user confirms for a staged upload; omitted fields keep the inferred role."""

    model_config = ConfigDict(extra="forbid", strict=True)

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


class ExternalDatasetRequest(RowWeightFields):
    """Files to register by reference, with roles (omitted roles are inferred from the
    first rows, as for an upload)."""

    model_config = ConfigDict(extra="forbid", strict=True)

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
    sample_rows: Annotated[int, Field(ge=1_000, le=5_000_000), WHOLE_NUMBER] | None = Field(
        default=None, description="rows of the seeded uniform sample the per-row diagnostics "
        "run on (default: the server's CALIBDASH_EXTERNAL_SAMPLE_ROWS)")


class DatasetRoles(BaseModel):
    """Which column plays which role."""

    model_config = ConfigDict(extra="allow")

    label: str | None = Field(description="true labels; null for an unlabeled batch")
    probabilities: list[str] = Field(description="one column per class, or one column of "
                                     "P(positive class)")
    features: list[str]
    split: str | None = Field(description="calibration/test column")
    id: str | None
    logits: bool
    time: str | None = Field(default=None, description="when each prediction was made")
    models: list[tuple[str, list[str]]] = Field(
        default_factory=list, description="several models' probability columns: "
        "[name, columns] pairs, the first being the dataset's probabilities")
    weight: str | None = Field(default=None, description="row weights")


class DatasetSummary(BaseModel):
    """A stored dataset: size, classes, confirmed roles and warnings."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    created: str
    filename: str
    n_rows: int
    n_columns: int | None = None
    n_classes: int
    classes: list[str]
    roles: DatasetRoles
    feature_kinds: dict[str, str] = Field(description="feature -> numeric or categorical")
    n_calibration: int | None = Field(description="rows of the calibration split; null "
                                      "without a split column")
    n_test: int | None
    n_left_out: int = Field(default=0, description="rows of the file left out for a missing "
                            "label or probability (drop_missing); n_rows counts the rest")
    renormalized: bool | None = None
    labelled: bool | None = None
    warnings: list[str]
    external: dict[str, Any] | None = Field(
        default=None, description="files registered by reference: uri, n_rows, n_sample, "
        "sampled, random_state, n_partitions, scheduler")
    weighted: bool = Field(default=False, description="the rows carry weights (a weight "
                           "column or negative_rate)")
    negative_rate: float | None = Field(default=None, description="the fraction of "
                                        "negatives the log kept, if given")
    n_eff: float | None = Field(default=None, description="Kish's effective sample size "
                                "(sum w)^2 / sum w^2 of weighted rows")


class InferredRoles(BaseModel):
    """Roles guessed from a staged upload's columns and values."""

    model_config = ConfigDict(extra="allow")

    label: str | None
    probabilities: list[str]
    features: list[str]
    split: str | None
    id: str | None
    time: str | None = None
    models: list[tuple[str, list[str]]] = Field(default_factory=list)
    weight: str | None = Field(default=None, description="row weights")
    problems: list[str] = Field(description="what to choose before the dataset can be "
                                "created (no label column found, ...)")
    notes: list[str] = Field(description="roles resting on weak evidence, to check")


class StagedUpload(BaseModel):
    """An uploaded file kept until its roles are confirmed
    (``POST /api/v1/uploads/{upload_id}/confirm``)."""

    model_config = ConfigDict(extra="allow")

    upload_id: str
    filename: str
    n_rows: int
    columns: list[str]
    dropped_columns: list[str] = Field(description="columns that cannot be used (nested "
                                       "values, ...)")
    warnings: list[str]
    inferred: InferredRoles
    dtypes: dict[str, str]
    preview: list[dict[str, Any]] = Field(description="the first rows, column -> value "
                                          "(missing values as null)")
