"""Dataset routes: upload, register external files, list, get, delete."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Response, UploadFile, status

from app.api.deps import ServicesDep
from app.api.responses import ACCEPTED, INVALID, NOT_FOUND, error, job_accepted
from app.api.uploads import UploadRoute, saved_upload
from app.jobs import Progress
from app.schemas import DatasetSummary, ExternalDatasetRequest, JobAccepted
from app.services.external import (
    ExternalRequest,
    allowed_uri,
    estimate_external,
    register_external,
)
from app.services.roles import RoleOverrides

router = APIRouter(prefix="/datasets", tags=["datasets"], route_class=UploadRoute)


def _columns(value: str | None) -> tuple[str, ...] | None:
    if value is None or not value.strip():
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


@router.post("", status_code=status.HTTP_201_CREATED, response_model=DatasetSummary,
             response_model_exclude_unset=True, responses=error(
                 422, "The file cannot be read as a prediction table (empty, not CSV or "
                 "Parquet, probabilities out of range, ...) or a role names no column: "
                 "`error.code` says which, `error.details` where."))
def create_dataset(
    services: ServicesDep,
    file: Annotated[UploadFile, File(description="CSV (optionally gzip) or Parquet")],
    label: Annotated[str | None, Form()] = None,
    probabilities: Annotated[str | None, Form(description="comma-separated columns")] = None,
    features: Annotated[str | None, Form(description="comma-separated columns")] = None,
    split: Annotated[str | None, Form()] = None,
    id: Annotated[str | None, Form()] = None,
    time: Annotated[str | None, Form(description="when each prediction was made")] = None,
    logits: Annotated[bool, Form()] = False,
    renormalize: Annotated[bool, Form()] = False,
    unlabeled: Annotated[bool, Form(description="a batch without labels (support only)")] = False,
    drop_missing: Annotated[bool, Form(description=(
        "leave out the rows with a missing label or probability instead of refusing the "
        "file"))] = False,
    weight: Annotated[str | None, Form(description="row weights (non-negative)")] = None,
    negative_rate: Annotated[float | None, Form(gt=0, le=1, description=(
        "the fraction of negatives a sampled log kept: negatives weigh 1 / rate"))] = None,
    name: Annotated[str | None, Form()] = None,
) -> dict[str, Any]:
    """Upload a prediction file; roles are inferred unless given."""
    overrides = RoleOverrides(label=label, probabilities=_columns(probabilities),
                              features=_columns(features), split=split, id=id,
                              logits=logits, renormalize=renormalize, unlabeled=unlabeled,
                              time=time, drop_missing=drop_missing, weight=weight,
                              negative_rate=negative_rate)
    with saved_upload(file, services.settings.max_upload_bytes,
                      services.settings.data_dir / "incoming") as path:
        return services.datasets.create_from_file(path, file.filename or "upload", overrides,
                                                  name=name)


@router.post("/external", status_code=status.HTTP_202_ACCEPTED, response_model=JobAccepted,
             responses={**ACCEPTED, **INVALID, **error(
                 403, "Registering files by reference is turned off "
                 "(CALIBDASH_EXTERNAL_ROOTS is empty), or `uri` is not under one of its "
                 "folders or prefixes.")})
def create_external_dataset(services: ServicesDep,
                            request: ExternalDatasetRequest) -> dict[str, Any]:
    """Register Parquet or CSV files of any size by reference (nothing is uploaded).

    A job reads them on Dask (``CALIBDASH_DASK_SCHEDULER``, or a local in-process
    cluster), computes the exact measures and binned diagrams of every row, and stores
    a seeded uniform sample for the per-row diagnostics; its result is the dataset.
    Only files under ``CALIBDASH_EXTERNAL_ROOTS`` may be named (403 otherwise).
    """
    settings = services.settings
    uri = allowed_uri(request.uri, settings.external_roots)
    external = ExternalRequest(uri, RoleOverrides(
        label=request.label, probabilities=tuple(request.probabilities or ()) or None,
        features=None if request.features is None else tuple(request.features),
        split=request.split, id=request.id, logits=request.logits,
        renormalize=request.renormalize, time=request.time, weight=request.weight,
        no_weight=request.no_weight, negative_rate=request.negative_rate), request.name)

    def work(progress: Progress) -> dict[str, Any]:
        return register_external(
            services.datasets, external, scheduler=settings.dask_scheduler,
            sample_rows=request.sample_rows or settings.external_sample_rows,
            random_state=settings.random_state, n_bootstrap=settings.n_bootstrap,
            progress=progress)

    job = services.jobs.submit("external", work, params=request.model_dump(exclude_none=True),
                               estimate=estimate_external(uri).as_dict())
    return job_accepted(job)


@router.get("", response_model=list[DatasetSummary], response_model_exclude_unset=True)
def list_datasets(services: ServicesDep) -> list[dict[str, Any]]:
    """Every stored dataset, oldest first."""
    return services.datasets.list()


@router.get("/{dataset_id}", response_model=DatasetSummary, response_model_exclude_unset=True,
            responses=NOT_FOUND)
def get_dataset(services: ServicesDep, dataset_id: str) -> dict[str, Any]:
    """One dataset's summary."""
    return services.datasets.summary(dataset_id)


@router.delete("/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT,
               response_class=Response, responses=NOT_FOUND)
def delete_dataset(services: ServicesDep, dataset_id: str) -> Response:
    """Delete a dataset with its results and recalibrations."""
    services.datasets.delete(dataset_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
