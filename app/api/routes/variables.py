"""Variable-based calibration routes (Kelly & Smyth 2023): the VECE ranking and one
variable's curves, in the paper's top-label view or, for binary models, the positive
view (P(class 1) against the frequency of class 1)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.api.deps import ServicesDep
from app.api.errors import ApiError
from app.api.responses import ACCEPTED, INVALID, NOT_FOUND, error, job_accepted_response
from app.schemas import VariableDetail, VariableRanking
from app.services import variables
from app.services.diagnostics import Subset
from calibcore.variable import CurveRange, VariableView

router = APIRouter(prefix="/datasets/{dataset_id}/variables", tags=["variables"],
                   responses={**NOT_FOUND, **INVALID})
_NO_FEATURES = ("The dataset has no feature columns (`no_features`), or asks for calibration "
                "or test rows without a split column (`no_split`).")

SubsetQuery = Annotated[Subset, Query(description=(
    "all, calibration or test rows (calibration and test need a split column)"))]
BinsQuery = Annotated[int, Query(ge=1, le=1000,
                                 description="equal-mass bins over a numeric variable (VECE)")]
SpanQuery = Annotated[float, Query(gt=0.0, le=2.0, allow_inf_nan=False,
                                   description="LOESS span: fraction of rows in each local fit "
                                   "(default 0.8)")]
PointsQuery = Annotated[int, Query(ge=10, le=5000,
                                   description="points the curves are evaluated at")]
RangeQuery = Annotated[CurveRange, Query(
    alias="range", description="where the curves of a numeric variable are drawn: between "
    "its 5th and 95th percentiles (5-95, the paper's), 1st and 99th (1-99), or its minimum "
    "and maximum (all)")]

VariableViewQuery = Annotated[VariableView, Query(description=(
    "top_label (the paper's: error 1[y != argmax] against 1 - confidence) or, for two "
    "classes, positive (1[y != 1] against 1 - P(class 1)): the top-label view folds a "
    "binary model's P(class 1) at 1/2"))]

_RANKING_DESCRIPTION = f"""
Every feature ranked by its variable-based expected calibration error (VECE;
equal-mass bins over a numeric variable, one bin per category otherwise), with
VCE(v*) and v* (the largest gap between the LOESS error and predicted-error
curves, or between a category's error and predicted error), a seeded
permutation p-value, and the rows used (`n`) and left out as missing
(`n_missing`); sorted by VECE descending.

**Responses.** 200 with the ranking when it is cached for these parameters, or
small enough to compute within about a second: variables x
(rows + {variables.VARIABLE_OVERHEAD_ROWS:,}) at most {variables.SYNC_WORK:,}
(e.g. up to 6 variables on 10,000 rows). Otherwise, or with `async=true`, 202 with
`{{"job_id": ...}}`: poll `GET /api/v1/jobs/{{job_id}}` until `status` is
`succeeded`; its `result` is the ranking, which is then cached, so asking
again returns 200. Asking again while the job runs returns the same job.
"""


@router.get("", description=_RANKING_DESCRIPTION, response_model=VariableRanking,
            response_model_exclude_unset=True, responses={**ACCEPTED, **error(422, _NO_FEATURES)})
def get_ranking(
    services: ServicesDep, dataset_id: str, n_bins: BinsQuery = 10,
    n_permutations: Annotated[int, Query(ge=0, le=10_000, description=(
        "permutations for the p-value; 0 skips the test"))] = 200,
    span: SpanQuery = 0.8, n_points: PointsQuery = 500, subset: SubsetQuery = "all",
    run_async: Annotated[bool, Query(alias="async", description=(
        "always run as a job (202) unless cached"))] = False,
    view: VariableViewQuery = "top_label",
) -> Any:
    """VECE ranking of the dataset's variables (200), or a job computing it (202)."""
    params = variables.RankingParams(n_bins=n_bins, n_permutations=n_permutations, span=span,
                                     n_points=n_points, subset=subset,
                                     random_state=services.settings.random_state, view=view)
    outcome = variables.request_ranking(services, dataset_id, params, as_job=run_async)
    if outcome.job is not None:
        return job_accepted_response(outcome.job)
    return outcome.ranking


@router.get("/{name:path}", response_model=VariableDetail, response_model_exclude_unset=True,
            responses={**error(404, "No such dataset, or `name` is not one of its feature "
                                    "columns (`unknown_variable`: `error.details.variables` "
                                    "lists them)."),
                       **error(422, "The variable has no values on these rows "
                                    "(`empty_variable`), a `span` leaves the LOESS fits too "
                                    "few of its rows, or calibration or test rows are asked "
                                    "for without a split column (`no_split`).")})
def get_variable(services: ServicesDep, dataset_id: str, name: str, span: SpanQuery = 0.8,
                 n_points: PointsQuery = 500, n_bins: BinsQuery = 10,
                 subset: SubsetQuery = "all", curve_range: RangeQuery = "5-95",
                 view: VariableViewQuery = "top_label") -> dict[str, Any]:
    """Calibration of one variable (Kelly & Smyth 2023, Figure 1b).

    Numeric: LOESS curves of the error rate and the predicted error
    (1 - confidence, top label) against the variable with 95% pointwise bands,
    VCE(v*) and v*, the histogram of the variable (one bar per integer for an
    integer-valued variable with few values), and the equal-mass bins behind
    VECE; `range` widens the curves from the 5th-95th percentiles to the
    1st-99th or the whole variable. Categorical: one row per category with the error rate (Wilson
    95% interval) and mean predicted error (t 95% interval). Unknown names are
    a 404 listing the dataset's variables.
    """
    prediction_set = services.datasets.prediction_set(dataset_id)
    try:
        detail = variables.variable_detail(prediction_set, name, span=span, n_points=n_points,
                                           n_bins=n_bins, subset=subset,
                                           curve_range=curve_range, view=view,
                                           random_state=services.settings.random_state)
    except variables.UnknownVariable as exc:
        raise ApiError(404, "unknown_variable", str(exc),
                       {"variable": name, "variables": exc.available}) from exc
    return {"dataset_id": dataset_id, **detail}
