"""The Dash UI mounted on the FastAPI application (Dash's FastAPI backend)."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dash import Dash
from fastapi import FastAPI

from app.services.context import Services
from app.ui import shell

#: Static assets (CSS, the streaming upload/apply scripts), shipped inside the package.
ASSETS_DIR = Path(__file__).resolve().parent / "assets"


class _ThreadedDash(Dash):
    """Dash whose synchronous callbacks run in worker threads, off the event loop.

    Dash's FastAPI backend calls a synchronous callback on the event loop itself, so
    one callback reading a large dataset stalled every other request (``/health``
    took 10 s under load). Registering each one as a coroutine that awaits
    :func:`asyncio.to_thread` keeps the loop free; ``to_thread`` copies the context
    variables, so ``dash.ctx`` works inside the thread.
    """

    def callback(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
        register = super().callback(*args, **kwargs)

        def decorate(function: Callable[..., Any]) -> Any:
            return register(_off_the_loop(function))

        return decorate


def _off_the_loop(function: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(function):
        return function

    @functools.wraps(function)
    async def in_a_thread(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(function, *args, **kwargs)

    return in_a_thread


def build_dash(server: FastAPI, services: Services) -> Dash:
    """Create the Dash app on ``server`` and register every page's callbacks."""
    app = _ThreadedDash(__name__, server=server,  # type: ignore[arg-type]  # stubs predate backends
               assets_folder=str(ASSETS_DIR), title="calibdash",
               suppress_callback_exceptions=True, update_title="")
    app.layout = shell.shell_layout()
    shell.register(app, services)
    # Dash's FastAPI backend runs this first-request setup (which collects the CSS and
    # scripts in assets/) only for "/" and "/_dash-*" requests, so a first visit to a
    # deep link such as /recalibrate was served without them; run it now instead.
    app._setup_server()
    return app
