"""Recalibration routes: fit (sync or as a job), list, download, model JSON."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import JSONResponse

from app.api.deps import ServicesDep
from app.api.errors import ApiError
from app.jobs import Progress
from app.schemas.models import ErrorResponse, RecalibrationRequest
from app.services.recalibration import method_catalogue

router = APIRouter(tags=["recalibrations"], responses={
    404: {"model": ErrorResponse}, 422: {"model": ErrorResponse}})

_MEDIA_TYPES = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}


@router.get("/methods")
def list_methods() -> list[dict[str, Any]]:
    """Registered recalibration methods and their default parameters."""
    return method_catalogue()


@router.post("/datasets/{dataset_id}/recalibrations", status_code=status.HTTP_201_CREATED,
             responses={202: {"description": "accepted as a job (async=true)"}})
def create_recalibration(services: ServicesDep, dataset_id: str,
                         request: RecalibrationRequest) -> Any:
    """Fit a recalibrator on calibration rows and compare it on held-out rows."""
    methods = request.methods or ([request.method] if request.method else [])
    if not methods:
        raise ApiError(422, "invalid_request",
                       "give 'method' (e.g. \"platt\") or 'methods' (a list) to fit.")
    services.datasets.record(dataset_id)

    def work(progress: Progress) -> list[dict[str, Any]]:
        results = []
        for number, method in enumerate(methods):
            params = request.params if len(methods) == 1 else request.params.get(method, {})
            results.append(services.recalibrations.fit(dataset_id, method, params,
                                                       n_bins=request.n_bins, progress=progress))
            progress.update((number + 1) / len(methods), f"fitted {method}")
        return results

    if request.run_async:
        job = services.jobs.submit("recalibration", work)
        return JSONResponse(status_code=202, content={"job_id": job.id, **job.snapshot()})
    results = work(Progress())
    return results[0] if request.methods is None else {"recalibrations": results}


@router.get("/datasets/{dataset_id}/recalibrations")
def list_recalibrations(services: ServicesDep, dataset_id: str) -> list[dict[str, Any]]:
    return services.recalibrations.list(dataset_id)


@router.get("/recalibrations/{recalibration_id}")
def get_recalibration(services: ServicesDep, recalibration_id: str) -> dict[str, Any]:
    return services.recalibrations.summary(recalibration_id)


@router.delete("/recalibrations/{recalibration_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_recalibration(services: ServicesDep, recalibration_id: str) -> Response:
    services.recalibrations.delete(recalibration_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/recalibrations/{recalibration_id}/download")
def download(services: ServicesDep, recalibration_id: str,
             format: Annotated[Literal["csv", "parquet"],
                               Query(description="csv or parquet")] = "csv") -> Response:
    """The dataset's columns plus one corrected probability column per class."""
    content = services.recalibrations.download(recalibration_id, format)
    filename = f"{recalibration_id}-calibrated.{format}"
    return Response(content=content, media_type=_MEDIA_TYPES[format],
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@router.get("/recalibrations/{recalibration_id}/model")
def model(services: ServicesDep, recalibration_id: str) -> JSONResponse:
    """The fitted recalibrator as JSON (load it with calibcore's ``Recalibrator.from_json``)."""
    return JSONResponse(content=services.recalibrations.model(recalibration_id), headers={
        "Content-Disposition": f'attachment; filename="{recalibration_id}-model.json"'})
