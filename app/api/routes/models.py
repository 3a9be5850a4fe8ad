"""Imported recalibrators: upload a model JSON, list, inspect, delete, apply to a file."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Request, Response, UploadFile, status

from app.api.deps import ServicesDep
from app.api.downloads import FILE_RESPONSES, FormatQuery, corrected_name, file_response
from app.api.errors import ApiError
from app.api.responses import NOT_FOUND, error
from app.api.uploads import UploadRoute, saved_upload
from app.schemas import SavedModel
from app.services import saved_models

router = APIRouter(prefix="/models", tags=["models"], route_class=UploadRoute)


async def model_document_body(request: Request, services: ServicesDep) -> Any:
    """The JSON body, read up to ``max_request_bytes`` and parsed here rather than by
    FastAPI, so that every unreadable document is a 422 ``invalid_model``."""
    limit = services.settings.max_request_bytes
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "too_large", f"a model document may have at most {limit:,} "
                           "bytes (CALIBDASH_MAX_REQUEST_BYTES).")
    return saved_models.parse_document(bytes(body))


#: The body is read by :func:`model_document_body`, so FastAPI does not document it; its
#: schema is the one ``GET /recalibrations/{id}/model`` answers with.
_DOCUMENT_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/RecalibratorDocument"}}}}}


@router.post("", status_code=status.HTTP_201_CREATED, openapi_extra=_DOCUMENT_BODY,
             response_model=SavedModel, response_model_exclude_unset=True, responses=error(
                 422, "Not a recalibrator document (`invalid_model`: unreadable JSON, a "
                      "method, parameter or state name it does not have, arrays that do not "
                      "match their shape, more numbers than CALIBDASH_MAX_MODEL_VALUES); "
                      "`error.details.field` says where."))
def import_model(services: ServicesDep,
                 document: Annotated[Any, Depends(model_document_body)]) -> dict[str, Any]:
    """Validate and store a fitted recalibrator (JSON only, never pickle).

    The document is checked against a schema before anything is built: known method,
    parameter and state names; arrays of float64/float32/int64/int32/bool with at most
    two dimensions whose lists match their shape; at most ``CALIBDASH_MAX_MODEL_VALUES``
    numbers in all. Anything else is a 422 ``invalid_model`` naming the field.
    """
    return saved_models.import_model(services.store, document,
                                     max_values=services.settings.max_model_values)


@router.get("", response_model=list[SavedModel], response_model_exclude_unset=True)
def list_models(services: ServicesDep) -> list[dict[str, Any]]:
    return saved_models.list_models(services.store)


@router.get("/{model_id}", response_model=SavedModel, response_model_exclude_unset=True,
            responses=NOT_FOUND)
def get_model(services: ServicesDep, model_id: str) -> dict[str, Any]:
    return saved_models.model_summary(services.store, model_id)


@router.delete("/{model_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response,
               responses=NOT_FOUND)
def delete_model(services: ServicesDep, model_id: str) -> Response:
    saved_models.delete_model(services.store, model_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{model_id}/apply", response_class=Response, responses={
    **FILE_RESPONSES, **NOT_FOUND, **error(
    422, "The file cannot be read, or lacks the columns the model reads.")})
def apply_model(services: ServicesDep, model_id: str,
                file: Annotated[UploadFile, File(description="CSV or Parquet with the "
                                                 "probability (and feature) columns the model "
                                                 "was fitted with; labels optional")],
                format: FormatQuery = "csv") -> Response:
    """A new file in, the same file with corrected probability columns out (and, for
    Venn-Abers, each class's interval: ``p0_<class>``, ``p1_<class>``)."""
    model = saved_models.read_model(services.store, model_id)
    with saved_upload(file, services.settings.max_upload_bytes,
                      services.settings.data_dir / "incoming") as path:
        table = services.datasets.read_file(path, file.filename or "upload")
    frame = saved_models.apply_model(model, table.frame)
    return file_response(frame, format, corrected_name(file.filename, format))
