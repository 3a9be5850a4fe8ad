"""Exceptions raised in Dash callbacks: logged with their traceback, and shown to the user.

Without a handler, Dash's FastAPI backend answers a failing callback with a bare 500
and logs nothing. :func:`report_callback_error` is Dash's ``on_error`` hook: it logs the
exception through the ``calibdash`` logger, puts a short message in the shell's alert
area (:data:`app.ui.ids.CALLBACK_ERROR`) with ``set_props``, and leaves the callback's
own outputs as they were.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from dash import callback_context, html, set_props

from app.ui import ids

logger = logging.getLogger("calibdash")


def report_callback_error(error: Exception) -> None:
    """Log ``error`` with its traceback and tell the user; returning None keeps the outputs."""
    outputs = _describe(callback_context.outputs_list)
    logger.error("Dash callback for %s failed", outputs, exc_info=error)
    # A new key per error remounts the message, so its fade-out animation starts again.
    set_props(ids.CALLBACK_ERROR, {"children": html.Div(
        f"Something went wrong while updating the page ({type(error).__name__}); the details "
        "are in the server log. Try again, or reload the page.",
        key=str(time.monotonic_ns()), className="callback-error-message")})


def _describe(outputs: Any) -> str:
    """``id.property`` of each output (Dash gives a dict, or a list for several)."""
    items = outputs if isinstance(outputs, list) else [outputs]
    flat = [entry for item in items for entry in (item if isinstance(item, list) else [item])]
    return ", ".join(f"{entry.get('id')}.{entry.get('property')}" for entry in flat
                     if isinstance(entry, dict)) or "(no output)"
