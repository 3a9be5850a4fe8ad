"""Recalibration routes: fit and compare (sync or as a job), list, download, model, apply."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Query, Response, UploadFile, status
from fastapi.responses import JSONResponse

from app.api.deps import ServicesDep
from app.api.downloads import (
    FILE_RESPONSES,
    FormatQuery,
    content_disposition,
    corrected_name,
    file_response,
)
from app.api.responses import ACCEPTED, NOT_FOUND, error, job_accepted_response
from app.api.uploads import UploadRoute, saved_upload
from app.jobs import Progress
from app.schemas import (
    FittedRecalibration,
    MethodInfo,
    Recalibration,
    RecalibrationBatch,
    RecalibrationComparison,
    RecalibrationNetBenefit,
    RecalibrationRequest,
    RecalibratorDocument,
)
from app.services.decision import (
    MAX_BOOTSTRAP,
    RECALIBRATION_THRESHOLDS,
    THRESHOLDS_PATTERN,
    checked_thresholds,
    parse_thresholds,
    recalibration_net_benefit,
)
from app.services.methods import MethodSpec, method_catalogue

#: Its paths are those of the resource they act on: a dataset's recalibrations, one
#: recalibration, and the catalogue of methods; so no prefix.
router = APIRouter(tags=["recalibrations"], route_class=UploadRoute)

#: What each choice of downloaded scores adds to the file name.
_SCORE_SUFFIXES = {"model": "calibrated", "cross_fitted": "calibrated-crossfitted"}
ScoresQuery = Annotated[Literal["model", "cross_fitted"], Query(description=(
    "model (default): the exported model (GET .../model) applied to every row, the same "
    "numbers as POST .../apply or `calibdash apply` with this dataset's file. "
    "cross_fitted: only for a dataset without a split column, each row corrected by the "
    "cross-fitting model fitted without it (5 models in all), the scores the held-out "
    "comparison measured; a recalibration fitted on a split has no such scores (422, code "
    "not_cross_fitted), its test rows are already held out from the one model."))]


def _specs(request: RecalibrationRequest) -> list[MethodSpec]:
    """The methods to fit: ``method``, or ``methods`` given as names or objects."""
    if request.methods is None:
        return [MethodSpec(request.method, request.params, request.features)] \
            if request.method else []
    specs = []
    for item in request.methods:
        if isinstance(item, str):
            params = request.params.get(item, {}) if isinstance(request.params.get(item),
                                                                  dict) else {}
            specs.append(MethodSpec(item, params, request.features))
        else:
            specs.append(MethodSpec(item.method, item.params, item.features))
    return specs


@router.get("/methods", response_model=list[MethodInfo])
def list_methods() -> list[dict[str, Any]]:
    """Registered recalibration methods, their default parameters and feature use."""
    return method_catalogue()


@router.post("/datasets/{dataset_id}/recalibrations", status_code=status.HTTP_201_CREATED,
             response_model=FittedRecalibration | RecalibrationBatch,
             response_model_exclude_unset=True, responses={**ACCEPTED, **NOT_FOUND, **error(
                 422, "Invalid parameters (neither `method` nor `methods`, an unknown "
                      "method), or ones this dataset or method cannot use: a parameter the "
                      "method does not have or out of its range, unknown or unusable "
                      "feature columns, too few calibration rows, every method failing; "
                      "`error.code` says which.")})
def create_recalibration(services: ServicesDep, dataset_id: str,
                         request: RecalibrationRequest) -> Any:
    """Fit recalibrators on calibration rows and compare them on held-out rows; with
    ``net_benefit``, each method's net benefit at ``thresholds`` on those rows beside the
    uncalibrated model's, with the paired bootstrap interval of the difference.

    ``method`` gives one result (with its ``comparison`` against the uncalibrated
    probabilities); ``methods`` gives ``{"recalibrations", "comparison", "failed"}``.
    With ``async`` true, 202 and a job whose ``result`` is that answer.
    """
    specs = _specs(request)
    services.recalibrations.check(dataset_id, specs)
    thresholds = checked_thresholds(request.thresholds)
    single = request.methods is None

    def work(progress: Progress) -> dict[str, Any]:
        result = services.recalibrations.fit_many(
            dataset_id, specs, n_bins=request.n_bins, n_bootstrap=request.n_bootstrap,
            progress=progress)
        result["net_benefit"] = recalibration_net_benefit(
            services, dataset_id, [fitted["id"] for fitted in result["recalibrations"]],
            thresholds=thresholds, n_bootstrap=min(request.n_bootstrap, MAX_BOOTSTRAP))
        if single:
            return {**result["recalibrations"][0], "comparison": result["comparison"],
                    "net_benefit": result["net_benefit"]}
        return result

    if request.run_async:
        body = request.model_dump(mode="json", by_alias=True, exclude_none=True)
        estimate = services.recalibrations.estimate(dataset_id, specs,
                                                    n_bootstrap=request.n_bootstrap)
        job = services.jobs.submit("recalibration", work,
                                   params={"dataset_id": dataset_id, **body},
                                   estimate=estimate.as_dict())
        return job_accepted_response(job)
    return work(Progress())


@router.get("/datasets/{dataset_id}/recalibrations", response_model=list[Recalibration],
            response_model_exclude_unset=True, responses=NOT_FOUND)
def list_recalibrations(services: ServicesDep, dataset_id: str) -> list[dict[str, Any]]:
    return services.recalibrations.list(dataset_id)


@router.get("/datasets/{dataset_id}/recalibrations/comparison",
            response_model=RecalibrationComparison, response_model_exclude_unset=True,
            responses={**NOT_FOUND, **error(422, "A recalibration of another dataset, or "
                                                 "invalid parameters.")})
def compare_recalibrations(
        services: ServicesDep, dataset_id: str,
        ids: Annotated[str, Query(description="comma-separated recalibration ids")],
        n_bins: Annotated[int, Query(ge=1, le=1000)] = 15,
        n_bootstrap: Annotated[int, Query(ge=0, le=2000)] = 100) -> dict[str, Any]:
    """The held-out comparison table of stored recalibrations of this dataset."""
    services.datasets.record(dataset_id)
    chosen = [part.strip() for part in ids.split(",") if part.strip()]
    return services.recalibrations.compare(dataset_id, chosen, n_bins=n_bins,
                                           n_bootstrap=n_bootstrap)


@router.get("/datasets/{dataset_id}/recalibrations/net-benefit",
            response_model=RecalibrationNetBenefit, response_model_exclude_unset=True,
            responses={**NOT_FOUND, **error(422, "Malformed thresholds (`invalid_thresholds`) "
                                                 "or invalid parameters; a recalibration not "
                                                 "of this dataset is a 404, a class it does "
                                                 "not have a 409 (`unknown_class`).")})
def recalibration_net_benefit_route(
        services: ServicesDep, dataset_id: str,
        ids: Annotated[str, Query(max_length=4000,
                                  description="comma-separated recalibration ids")],
        thresholds: Annotated[str | None, Query(
            max_length=4000, pattern=THRESHOLDS_PATTERN, description=(
                "comma-separated decimals in (0, 1), at most 200 (sorted and repeats "
                "dropped); default 0.1,0.2,0.3"))] = None,
        n_bootstrap: Annotated[int, Query(ge=0, le=MAX_BOOTSTRAP)] = 200,
        positive_class: Annotated[str | None, Query(
            alias="class", max_length=200,
            description="the event's class (default the last)")] = None) -> dict[str, Any]:
    """Does recalibration change what one would do? Each recalibration's net benefit on the
    held-out rows at ``thresholds`` beside the uncalibrated model's, with the paired
    bootstrap interval of the difference and the share of rows whose decision changes."""
    services.datasets.record(dataset_id)
    chosen = [part.strip() for part in ids.split(",") if part.strip()]
    return recalibration_net_benefit(
        services, dataset_id, chosen,
        thresholds=parse_thresholds(thresholds, RECALIBRATION_THRESHOLDS, sort=True),
        n_bootstrap=n_bootstrap, positive_class=positive_class)


@router.get("/recalibrations/{recalibration_id}", response_model=Recalibration,
            response_model_exclude_unset=True, responses=NOT_FOUND)
def get_recalibration(services: ServicesDep, recalibration_id: str) -> dict[str, Any]:
    return services.recalibrations.summary(recalibration_id)


@router.delete("/recalibrations/{recalibration_id}", status_code=status.HTTP_204_NO_CONTENT,
               response_class=Response, responses=NOT_FOUND)
def delete_recalibration(services: ServicesDep, recalibration_id: str) -> Response:
    services.recalibrations.delete(recalibration_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/recalibrations/{recalibration_id}/download", response_class=Response,
            responses={**FILE_RESPONSES, **NOT_FOUND, **error(
                422, "A per-row column in `columns` not computed yet, or cross-fitted "
                     "scores of a recalibration fitted on a split (`not_cross_fitted`).")})
def download(services: ServicesDep, recalibration_id: str, format: FormatQuery = "csv",
             scores: ScoresQuery = "model",
             columns: Annotated[str | None, Query(
                 description="extra per-row columns computed on other pages, e.g. "
                 "lce,hh,support (422 if not computed)")] = None) -> Response:
    """The dataset's columns plus one corrected probability column per class
    (``calibrated_proba_<class>``); Venn-Abers adds each class's interval after them,
    ``p0_<class>`` (lower end) and ``p1_<class>`` (upper end).

    ``scores`` says whose: the exported model's on every row (default; what applying the
    model to this file gives) or, for a dataset without a split, the cross-fitted ones
    the held-out comparison scored. Named ``<dataset>-<method>-calibrated.<format>``
    (``-calibrated-crossfitted`` for ``scores=cross_fitted``), the dataset's name reduced
    to safe characters.
    """
    extra = [part.strip() for part in (columns or "").split(",") if part.strip()]
    frame = services.recalibrations.corrected_frame(recalibration_id, extra, scores=scores)
    stem = services.recalibrations.file_stem(recalibration_id)
    return file_response(frame, format, f"{stem}-{_SCORE_SUFFIXES[scores]}.{format}")


@router.get("/recalibrations/{recalibration_id}/model", response_model=RecalibratorDocument,
            response_model_exclude_unset=True, responses=NOT_FOUND)
def model(services: ServicesDep, recalibration_id: str) -> JSONResponse:
    """The fitted recalibrator as JSON (load it with calibcore's ``Recalibrator.from_json``),
    named ``<dataset>-<method>-model.json``."""
    document = services.recalibrations.model(recalibration_id)
    filename = f"{services.recalibrations.file_stem(recalibration_id)}-model.json"
    return JSONResponse(content=document,
                        headers={"Content-Disposition": content_disposition(filename)})


@router.post("/recalibrations/{recalibration_id}/apply", response_class=Response,
             responses={**FILE_RESPONSES, **NOT_FOUND, **error(
                 422, "The file cannot be read, or lacks the columns the recalibrator "
                      "reads.")})
def apply(services: ServicesDep, recalibration_id: str,
          file: Annotated[UploadFile, File(description="CSV or Parquet with the probability "
                                                       "(and feature) columns; labels optional")],
          format: FormatQuery = "csv") -> Response:
    """A new file in, the same file with corrected probability columns out (and, for
    Venn-Abers, each class's interval: ``p0_<class>``, ``p1_<class>``)."""
    with saved_upload(file, services.settings.max_upload_bytes,
                      services.settings.data_dir / "incoming") as path:
        frame = services.recalibrations.apply(recalibration_id, path, file.filename or "upload")
    return file_response(frame, format, corrected_name(file.filename, format))
