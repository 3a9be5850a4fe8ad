"""The clinical calibration report of a dataset: as JSON, and as a one-page HTML report to
attach to a paper."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import HTMLResponse

from app.api.deps import ServicesDep
from app.api.responses import INVALID, NOT_FOUND, error
from app.schemas import ClinicalReport
from app.services import diagnostics
from app.services.clinical import clinical_for
from app.ui.clinical_report import render_clinical_html

router = APIRouter(prefix="/datasets/{dataset_id}/clinical", tags=["clinical"],
                   responses={**NOT_FOUND, **INVALID})

TargetQuery = Annotated[str | None, Query(max_length=500, description=(
    "the class whose probability is judged against the rest (default: class 1 of a "
    "binary file, the first class of more)"))]
SubsetQuery = Annotated[diagnostics.Subset, Query(description=(
    "all, calibration or test rows (calibration and test need a split column: 422 "
    "no_split otherwise)"))]
REFUSALS = error(422, "`target` is not a class of the dataset (`unknown_class`), the rows "
                      "hold only one outcome (`single_class`) or one probability "
                      "(`constant_probability`), or the parameters are invalid.")


@router.get("", response_model=ClinicalReport, response_model_exclude_unset=True,
            responses=REFUSALS)
def get_clinical(services: ServicesDep, dataset_id: str, target: TargetQuery = None,
                 subset: SubsetQuery = "all") -> dict[str, Any]:
    """The clinical calibration report of P(target): O:E, calibration-in-the-large,
    calibration intercept and slope (Wald 95% intervals), Spiegelhalter's z and p,
    ICI/E50/E90/Emax of the lowess calibration curve (as R's ``rms::val.prob``),
    Hosmer-Lemeshow, the curve with its 95% band, and the level of Van Calster et al.'s
    calibration hierarchy the data are consistent with. Cached per parameter set."""
    return clinical_for(services, dataset_id, target=target, subset=subset)


@router.get("/report.html", response_class=Response, responses={
    200: {"content": {"text/html": {"schema": {"type": "string"}}},
          "description": "A self-contained, printable one-page report (HTML)"}, **REFUSALS})
def get_clinical_report(services: ServicesDep, dataset_id: str, target: TargetQuery = None,
                        subset: SubsetQuery = "all") -> HTMLResponse:
    """The same report as one self-contained HTML page in the TRIPOD spirit (what was
    validated, on which rows, every quantity with its interval and method, the curve and
    the verdict), styled to print on one page: print it to PDF from the browser."""
    report = clinical_for(services, dataset_id, target=target, subset=subset)
    return HTMLResponse(render_clinical_html(report))
