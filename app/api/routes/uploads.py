"""Staged uploads: upload a file, see its inferred roles, confirm them to create a dataset."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, UploadFile, status

from app.api.deps import ServicesDep
from app.api.responses import INVALID, error
from app.api.uploads import UploadRoute, saved_upload
from app.schemas import DatasetSummary, RolesRequest, StagedUpload
from app.services.roles import RoleOverrides

router = APIRouter(prefix="/uploads", tags=["uploads"], responses=INVALID, route_class=UploadRoute)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=StagedUpload,
             response_model_exclude_unset=True, responses=error(
                 422, "The file cannot be read as a table (empty, not CSV or Parquet, ...): "
                 "`error.code` says why."))
def stage_upload(
    services: ServicesDep,
    file: Annotated[UploadFile, File(description="CSV (optionally gzip) or Parquet")],
) -> dict[str, Any]:
    """Upload a file and get its inferred roles and first rows, to confirm before use."""
    with saved_upload(file, services.settings.max_upload_bytes,
                      services.settings.data_dir / "incoming") as path:
        return services.datasets.stage_upload(path, file.filename or "upload")


@router.post("/{upload_id}/confirm", status_code=status.HTTP_201_CREATED,
             response_model=DatasetSummary, response_model_exclude_unset=True,
             responses=error(404, "No such staged upload: it expired (they are kept "
                                  "CALIBDASH_STAGED_UPLOAD_HOURS) or was confirmed already."))
def confirm_upload(services: ServicesDep, upload_id: str, roles: RolesRequest) -> dict[str, Any]:
    """Confirm (or correct) the roles of a staged upload and create the dataset."""
    overrides = RoleOverrides(
        label=roles.label, probabilities=tuple(roles.probabilities or ()) or None,
        features=None if roles.features is None else tuple(roles.features),
        split=roles.split, id=roles.id, no_split=roles.no_split, no_id=roles.no_id,
        logits=roles.logits, renormalize=roles.renormalize, unlabeled=roles.unlabeled,
        time=roles.time, no_time=roles.no_time, drop_missing=roles.drop_missing,
        weight=roles.weight, no_weight=roles.no_weight, negative_rate=roles.negative_rate,
        models=None if roles.models is None else tuple(
            (name, tuple(columns)) for name, columns in roles.models.items()))
    return services.datasets.create_from_upload(upload_id, overrides, name=roles.name)
