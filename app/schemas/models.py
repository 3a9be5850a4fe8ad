"""Imported recalibrators: the portable model document and the stored models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.recalibrations import MethodName


class DocumentInputs(BaseModel):
    """The columns a recalibrator reads and the classes it predicts."""

    model_config = ConfigDict(extra="forbid")

    probability_columns: list[str] = Field(min_length=1)
    classes: list[str] = Field(min_length=1)
    logits: bool = False
    renormalize: bool = False
    label_column: str | None = None
    features: dict[str, Any] | None = Field(
        default=None, description="the fitted feature encoder: kind (variable, table or "
        "encoded), columns and representation")


class RecalibratorDocument(BaseModel):
    """A fitted recalibrator as JSON (``Recalibrator.to_json()`` plus its inputs); load it
    with calibcore's ``Recalibrator.from_json``.

    Arrays are ``{"__ndarray__": [...], "dtype": "<f8", "shape": [...]}``; the parameter
    and state names are the method's own, and a document naming others is refused (422
    ``invalid_model``)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["calibdash-recalibrator"]
    version: Literal[1]
    method: MethodName
    params: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(description="the fitted attributes, with n_classes_")
    inputs: DocumentInputs | None = None


class ModelInputs(BaseModel):
    """What a stored model reads."""

    model_config = ConfigDict(extra="allow")

    probability_columns: list[str]
    classes: list[str]
    feature_columns: list[str]


class SavedModel(BaseModel):
    """A stored (imported) recalibrator."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    created: str
    method: str
    display_name: str
    n_classes: int
    inputs: ModelInputs | None = Field(description="null for a document without inputs")
