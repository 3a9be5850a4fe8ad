"""Several models' probabilities of the same rows, compared (on the positive view by
default for two classes: the top-label view can fold over- and under-prediction of
class 1 into zero; top label for more)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.api.deps import ServicesDep
from app.api.responses import INVALID, NOT_FOUND, error
from app.schemas import ModelComparison
from app.services.models_compare import compare_for
from calibcore.data import View

router = APIRouter(prefix="/datasets/{dataset_id}/compare", tags=["compare"],
                   responses={**NOT_FOUND, **INVALID})


@router.get("", response_model=ModelComparison, response_model_exclude_unset=True,
            responses=error(422, "The dataset holds one model's probabilities (`no_models`: "
                                 "a comparison needs a file with each model's columns), "
                                 "`reference` is not one of its models, or the parameters "
                                 "are invalid."))
def get_comparison(
        services: ServicesDep, dataset_id: str,
        reference: Annotated[str | None, Query(max_length=200, description=(
            "the model the others are compared with (default: the first)"))] = None,
        n_bootstrap: Annotated[int, Query(ge=0, le=2000)] = 200,
        view: Annotated[View | None, Query(description=(
            "top_label, positive or classwise; default positive for two classes, "
            "top_label for more"))] = None) -> dict[str, Any]:
    """Several models' probabilities of the same rows (columns grouped per model, e.g.
    gbm_proba_0, gbm_proba_1, lr_proba_0, ...): every measure per model with its 95%
    interval, and each model's difference to ``reference`` with a paired-bootstrap
    interval and p-value (the rows are shared, so the resamples are too), plus each
    model's binned reliability diagram. Cached per parameter set."""
    return compare_for(services, dataset_id, reference=reference, n_bootstrap=n_bootstrap,
                       view=view)
