"""Imported recalibrators: upload a model JSON, list, inspect, delete, apply to a file."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, File, Response, UploadFile, status

from app.api.deps import ServicesDep
from app.api.routes.recalibrations import FormatQuery, corrected_name, file_response
from app.api.uploads import saved_upload
from app.schemas.models import ErrorResponse
from app.services import saved_models
from app.services.tables import export_bytes

router = APIRouter(tags=["models"], responses={
    404: {"model": ErrorResponse}, 422: {"model": ErrorResponse}})


@router.post("/models", status_code=status.HTTP_201_CREATED)
def import_model(services: ServicesDep, document: Annotated[Any, Body(
        description="a recalibrator exported by GET /recalibrations/{id}/model")],
                 ) -> dict[str, Any]:
    """Validate and store a fitted recalibrator (JSON only, never pickle)."""
    return saved_models.import_model(services.store, document)


@router.get("/models")
def list_models(services: ServicesDep) -> list[dict[str, Any]]:
    return saved_models.list_models(services.store)


@router.get("/models/{model_id}")
def get_model(services: ServicesDep, model_id: str) -> dict[str, Any]:
    return saved_models.model_summary(services.store, model_id)


@router.delete("/models/{model_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_model(services: ServicesDep, model_id: str) -> Response:
    saved_models.delete_model(services.store, model_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/models/{model_id}/apply")
def apply_model(services: ServicesDep, model_id: str,
                file: Annotated[UploadFile, File(description="CSV or Parquet with the "
                                                 "probability (and feature) columns the model "
                                                 "was fitted with; labels optional")],
                format: FormatQuery = "csv") -> Response:
    """A new file in, the same file with corrected probability columns out."""
    model = saved_models.read_model(services.store, model_id)
    with saved_upload(file, services.settings.max_upload_bytes,
                      services.settings.data_dir / "incoming") as path:
        table = services.datasets.read_file(path, file.filename or "upload")
    frame = saved_models.apply_model(model, table.frame)
    return file_response(export_bytes(frame, format), format,
                         corrected_name(file.filename, format))
