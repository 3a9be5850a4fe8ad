"""Dataset routes: upload, staged uploads, list/get/delete, measures, reliability."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Response, UploadFile, status
from fastapi.responses import JSONResponse

from app.api.deps import ServicesDep
from app.api.uploads import saved_upload
from app.jobs import Progress
from app.schemas.models import (
    DatasetSummary,
    ErrorResponse,
    ExternalDatasetRequest,
    MetricsResponse,
    RolesRequest,
)
from app.services import diagnostics
from app.services.datasets import RoleOverrides
from app.services.external import ExternalRequest, allowed_uri, register_external
from calibcore.binning import Binning
from calibcore.views import View

router = APIRouter(tags=["datasets"], responses={
    404: {"model": ErrorResponse}, 422: {"model": ErrorResponse}})

ViewQuery = Annotated[View | None, Query(description=(
    "top_label, positive or classwise; default positive for two classes (P(class 1) "
    "against the frequency of class 1), top_label for more"))]
BinsQuery = Annotated[int, Query(ge=1, le=1000, description="number of bins")]
BinningQuery = Annotated[Binning, Query(description="equal_width or equal_mass")]
SubsetQuery = Annotated[diagnostics.Subset, Query(description="all, calibration or test rows")]


def _columns(value: str | None) -> tuple[str, ...] | None:
    if value is None or not value.strip():
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


@router.post("/datasets", status_code=status.HTTP_201_CREATED, response_model=DatasetSummary,
             responses={413: {"model": ErrorResponse}})
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
    name: Annotated[str | None, Form()] = None,
) -> dict[str, Any]:
    """Upload a prediction file; roles are inferred unless given."""
    overrides = RoleOverrides(label=label, probabilities=_columns(probabilities),
                              features=_columns(features), split=split, id=id,
                              logits=logits, renormalize=renormalize, unlabeled=unlabeled,
                              time=time, drop_missing=drop_missing)
    with saved_upload(file, services.settings.max_upload_bytes,
                      services.settings.data_dir / "incoming") as path:
        return services.datasets.create_from_file(path, file.filename or "upload", overrides,
                                                  name=name)


@router.post("/datasets/external", status_code=status.HTTP_202_ACCEPTED,
             responses={403: {"model": ErrorResponse}})
def create_external_dataset(services: ServicesDep,
                            request: ExternalDatasetRequest) -> JSONResponse:
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
        renormalize=request.renormalize, time=request.time), request.name)

    def work(progress: Progress) -> dict[str, Any]:
        return register_external(
            services.datasets, external, scheduler=settings.dask_scheduler,
            sample_rows=request.sample_rows or settings.external_sample_rows,
            random_state=settings.random_state, n_bootstrap=settings.n_bootstrap,
            progress=progress)

    job = services.jobs.submit("external", work, params=request.model_dump(exclude_none=True))
    return JSONResponse(status_code=202, content={"job_id": job.id, **job.snapshot()})


@router.post("/uploads", status_code=status.HTTP_201_CREATED,
             responses={413: {"model": ErrorResponse}})
def stage_upload(
    services: ServicesDep,
    file: Annotated[UploadFile, File(description="CSV (optionally gzip) or Parquet")],
) -> dict[str, Any]:
    """Upload a file and get its inferred roles and first rows, to confirm before use."""
    with saved_upload(file, services.settings.max_upload_bytes,
                      services.settings.data_dir / "incoming") as path:
        return services.datasets.stage_upload(path, file.filename or "upload")


@router.post("/uploads/{upload_id}/confirm", status_code=status.HTTP_201_CREATED,
             response_model=DatasetSummary)
def confirm_upload(services: ServicesDep, upload_id: str, roles: RolesRequest) -> dict[str, Any]:
    """Confirm (or correct) the roles of a staged upload and create the dataset."""
    overrides = RoleOverrides(
        label=roles.label, probabilities=tuple(roles.probabilities or ()) or None,
        features=None if roles.features is None else tuple(roles.features),
        split=roles.split, id=roles.id, no_split=roles.no_split, no_id=roles.no_id,
        logits=roles.logits, renormalize=roles.renormalize, unlabeled=roles.unlabeled,
        time=roles.time, no_time=roles.no_time, drop_missing=roles.drop_missing,
        models=None if roles.models is None else tuple(
            (name, tuple(columns)) for name, columns in roles.models.items()))
    return services.datasets.create_from_upload(upload_id, overrides, name=roles.name)


@router.get("/datasets", response_model=list[DatasetSummary])
def list_datasets(services: ServicesDep) -> list[dict[str, Any]]:
    return services.datasets.list()


@router.get("/datasets/{dataset_id}", response_model=DatasetSummary)
def get_dataset(services: ServicesDep, dataset_id: str) -> dict[str, Any]:
    return services.datasets.summary(dataset_id)


@router.delete("/datasets/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_dataset(services: ServicesDep, dataset_id: str) -> Response:
    services.datasets.delete(dataset_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


BootstrapQuery = Annotated[int, Query(ge=0, le=2000,
                                      description="bootstrap resamples for the intervals")]


@router.get("/datasets/{dataset_id}/metrics", response_model=MetricsResponse)
def get_metrics(services: ServicesDep, dataset_id: str, view: ViewQuery = None,
                n_bins: BinsQuery = 15, binning: BinningQuery = "equal_width",
                subset: SubsetQuery = "all", n_bootstrap: BootstrapQuery = 200,
                ) -> dict[str, Any]:
    """Every global measure of one view on all, calibration or test rows, with 95% intervals.

    ``metrics`` maps measure -> value; ``measures`` adds the basic-bootstrap interval,
    whether the measure is a consistent calibration measure (Błasiok et al. 2023) and its meaning.
    ``calibration_test`` tests whether the probabilities are calibrated at all
    (consistency resampling on kCE, with ``n_bootstrap`` resamples; null when it is 0) in
    the default view, and checks the verdict in a second view (``other_views``).
    Results are cached per parameter set.
    """
    request = diagnostics.MetricsRequest(
        view=diagnostics.dataset_view(services, dataset_id, view), n_bins=n_bins,
        binning=binning, subset=subset, n_bootstrap=n_bootstrap)
    return diagnostics.metrics_for(services, dataset_id, request)


@router.get("/datasets/{dataset_id}/metrics/bins")
def get_bin_sensitivity(services: ServicesDep, dataset_id: str, view: ViewQuery = None,
                        subset: SubsetQuery = "all") -> dict[str, Any]:
    """Binned ECE for 5-100 bins beside the bin-free consistent measures (cached)."""
    return diagnostics.bin_sensitivity_for(
        services, dataset_id, view=diagnostics.dataset_view(services, dataset_id, view),
        subset=subset)


@router.get("/datasets/{dataset_id}/reliability")
def get_reliability(services: ServicesDep, dataset_id: str, view: ViewQuery = None,
                    n_bins: BinsQuery = 15, binning: BinningQuery = "equal_width",
                    subset: SubsetQuery = "all", n_bootstrap: BootstrapQuery = 200,
                    ) -> dict[str, Any]:
    """Binned diagrams (Wilson 95% interval per bin) and smooth diagrams (bootstrap band),
    cached per parameter set."""
    request = diagnostics.MetricsRequest(
        view=diagnostics.dataset_view(services, dataset_id, view), n_bins=n_bins,
        binning=binning, subset=subset, n_bootstrap=n_bootstrap)
    return diagnostics.reliability_for(services, dataset_id, request)
