"""Calibration over time, on the positive view by default for two classes (the top label
for more)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.api.deps import ServicesDep
from app.api.responses import INVALID, NOT_FOUND, error
from app.schemas import Timeline
from app.services.timeline import ROLLING_METHODS, timeline_for
from calibcore.insights import Frequency, TimelineView

router = APIRouter(prefix="/datasets/{dataset_id}/timeline", tags=["timeline"],
                   responses={**NOT_FOUND, **INVALID})


@router.get("", response_model=Timeline, response_model_exclude_unset=True, responses=error(
    422, "The dataset has no time column and `time` names none (`no_time`), `time` is not "
         "one of its columns (`unknown_column`), its values cannot be read as times or "
         "ordered numbers, the reference window does not exist, or the parameters are "
         "invalid."))
def get_timeline(
        services: ServicesDep, dataset_id: str,
        freq: Annotated[Frequency, Query(description="auto, D, W, M, Q or Y (dates)")] = "auto",
        reference: Annotated[int, Query(ge=0, le=10_000,
                                        description="index of the reference window")] = 0,
        method: Annotated[str, Query(
            description="recalibrator fitted on each window and scored on the next",
            json_schema_extra={"enum": list(ROLLING_METHODS)})] = "temperature",
        time: Annotated[str | None, Query(description="time column (default: the "
                                                      "dataset's time role)")] = None,
        view: Annotated[TimelineView | None, Query(description=(
            "top_label or positive; default positive for two classes, top_label for "
            "more"))] = None,
) -> dict[str, Any]:
    """Calibration over time: per window n, accuracy, mean confidence, gap, ECE and smooth
    ECE with 95% intervals; the change test of each window's gap against the reference
    window (Welch, Holm-adjusted; ``test`` says which and why) with
    ``flagged`` windows; and ``rolling``: the recalibrator fitted on each window, scored
    on the next. Cached per parameter set."""
    return timeline_for(services, dataset_id, freq=freq, reference=reference, method=method,
                        time=time, view=view)
