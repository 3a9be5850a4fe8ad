"""What several pages' callbacks need from the services, off the event loop."""

from __future__ import annotations

import asyncio
from typing import Any

from dash import Dash, Input, Output, html

from app.services import diagnostics
from app.services.context import Services
from app.services.datasets import NotFound
from app.ui import ids
from calibcore.exceptions import CalibrationInputError


async def dataset_summary(services: Services, dataset_id: str | None) -> dict[str, Any] | None:
    """The chosen dataset's summary, or None when none is chosen or it was deleted."""
    if not dataset_id:
        return None
    try:
        return await asyncio.to_thread(services.datasets.summary, dataset_id)
    except NotFound:
        return None


#: How the view controls name each view.
VIEW_LABELS = {"positive": "positive class (P(class 1))", "top_label": "top label (confidence)",
               "classwise": "classwise"}


def view_options(summary: dict[str, Any] | None, views: tuple[str, ...]
                 ) -> tuple[list[dict[str, Any]], str | None]:
    """The options of a page's view control and the dataset's default view: positive
    for two classes (the top-label view can fold over- and under-prediction of class 1
    into zero), top label for more, where the positive view is not offered."""
    if summary is None:
        return [], None
    binary = summary["n_classes"] == 2
    options = [{"label": VIEW_LABELS[view], "value": view} for view in views
               if binary or view != "positive"]
    return options, "positive" if binary else "top_label"


def folded_view_note(services: Services, dataset_id: str, subset: Any,
                     advice: str) -> html.Div | None:
    """On a page whose diagnostic is defined on the top label, for a binary model: the
    positive-class ECE beside the top-label one (both plug-in, on ``subset``), so that
    nobody reads "calibrated" from the folded view; None for more classes."""
    if len(services.datasets.record(dataset_id).meta["classes"]) != 2:
        return None
    values = {}
    for view in ("positive", "top_label"):
        request = diagnostics.MetricsRequest(view=view, subset=subset, n_bootstrap=0)
        values[view] = diagnostics.metrics_for(services, dataset_id, request)["metrics"]["ece"]
    return html.Div(
        f"Top-label view: this binary model's ECE is {values['top_label']:.4f} on the top "
        f"label and {values['positive']:.4f} on P(class 1). The top label folds the model at "
        "1/2, so over-prediction of class 1 (rows predicted positive) and under-prediction "
        "(rows predicted negative) can cancel; " + advice + ".",
        className="note note-warning" if values["positive"] > 2 * values["top_label"] + 0.01
        else "note note-info")


def register_folded_note(app: Dash, services: Services, note_id: str, advice: str) -> None:
    """Fill ``note_id`` with :func:`folded_view_note` of the chosen dataset (all rows)."""

    @app.callback(Output(note_id, "children"), Input(ids.DATASET_PICKER, "value"))
    async def note(dataset_id: str | None) -> Any:
        if not dataset_id:
            return None
        try:
            return await asyncio.to_thread(folded_view_note, services, dataset_id, "all",
                                           advice)
        except (CalibrationInputError, NotFound):
            return None
