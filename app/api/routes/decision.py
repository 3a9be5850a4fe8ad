"""Decision curves: net benefit of acting on the probabilities at each threshold."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.api.deps import ServicesDep
from app.api.responses import INVALID, NOT_FOUND, error
from app.schemas import DecisionCurve
from app.services import diagnostics
from app.services.decision import (
    MAX_BOOTSTRAP,
    THRESHOLDS_PATTERN,
    decision_for,
    parse_thresholds,
)

router = APIRouter(prefix="/datasets/{dataset_id}/decision", tags=["decision"],
                   responses={**NOT_FOUND, **INVALID})


@router.get("", response_model=DecisionCurve, response_model_exclude_unset=True,
            responses=error(422, "Thresholds that are not decimals strictly between 0 "
                                 "and 1 or more than 200 (`invalid_request`), or other "
                                 "invalid parameters; a "
                                 "class the dataset does not have (`unknown_class`) or "
                                 "calibration or test rows without a split column "
                                 "(`no_split`) are a 409."))
def get_decision(
        services: ServicesDep, dataset_id: str,
        thresholds: Annotated[str | None, Query(
            max_length=4000, pattern=THRESHOLDS_PATTERN, description=(
                "comma-separated decimals in (0, 1), at most 200, e.g. 0.05,0.1,0.2 (sorted "
                "and repeats dropped); default 0.01, 0.02, ..., 0.99"))] = None,
        subset: Annotated[diagnostics.Subset, Query(description=(
            "all, calibration or test rows (calibration and test need a split column)"))
        ] = "all",
        n_bootstrap: Annotated[int, Query(ge=0, le=MAX_BOOTSTRAP, description=(
            "bootstrap resamples of the model's band (0: none)"))] = 200,
        positive_class: Annotated[str | None, Query(
            alias="class", max_length=200, description=(
                "the event's class (default the last: class 1 of a binary file); with more "
                "classes, that class against the rest"))] = None,
) -> dict[str, Any]:
    """Net benefit NB(t) = TP/n - FP/n * t/(1-t) of treating the rows whose probability of
    the event is at least t (Vickers & Elkin 2006), beside treat all and treat none, with
    the model's percentile bootstrap band. Cached per parameter set."""
    return decision_for(services, dataset_id,
                        thresholds=parse_thresholds(thresholds, sort=True),
                        subset=subset, n_bootstrap=n_bootstrap, positive_class=positive_class)
