"""The Dash UI mounted on the FastAPI application (Dash's FastAPI backend)."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dash import Dash, Input
from fastapi import FastAPI

from app.gate import ComputeGate
from app.services.context import Services
from app.ui import shell
from app.ui.callback_errors import report_callback_error

#: Static assets (CSS, the streaming upload/apply scripts), shipped inside the package.
ASSETS_DIR = Path(__file__).resolve().parent / "assets"


class _ThreadedDash(Dash):
    """Dash whose synchronous callbacks run in worker threads, off the event loop.

    Dash's FastAPI backend calls a synchronous callback on the event loop itself, so
    one callback reading a large dataset stalled every other request (``/health``
    took 10 s under load). Registering each one as a coroutine that awaits
    :func:`asyncio.to_thread` keeps the loop free; ``to_thread`` copies the context
    variables, so ``dash.ctx`` works inside the thread. Callbacks wait for a slot of
    the compute gate (:mod:`app.gate`), except pollers (triggered by an interval),
    which only read a job's state and must keep the progress moving, and callbacks
    registered with ``light=True``.
    """

    gate: ComputeGate

    def callback(self, *args: Any, light: bool = False,
                 **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
        """Dash's ``callback``; ``light=True`` marks one that never waits for a slot (page
        routing: the navigation must appear while a heavy figure is computed)."""
        register = super().callback(*args, **kwargs)
        poller = light or any(isinstance(item, Input) and item.component_property ==
                              "n_intervals" for item in _flat(args))

        def decorate(function: Callable[..., Any]) -> Any:
            if inspect.iscoroutinefunction(function):
                return register(function)
            return register(_off_the_loop(function, None if poller else self.gate))

        return decorate


def _flat(items: Any) -> list[Any]:
    flat: list[Any] = []
    for item in items:
        flat.extend(_flat(item) if isinstance(item, list | tuple) else [item])
    return flat


def _off_the_loop(function: Callable[..., Any], gate: ComputeGate | None) -> Callable[..., Any]:
    @functools.wraps(function)
    async def in_a_thread(*args: Any, **kwargs: Any) -> Any:
        if gate is None:
            return await asyncio.to_thread(function, *args, **kwargs)
        async with gate.semaphore:
            return await asyncio.to_thread(function, *args, **kwargs)

    return in_a_thread


def build_dash(server: FastAPI, services: Services, gate: ComputeGate) -> Dash:
    """Create the Dash app on ``server`` and register every page's callbacks."""
    app = _ThreadedDash(__name__, server=server,  # type: ignore[arg-type]  # stubs predate backends
               assets_folder=str(ASSETS_DIR), title="calibdash",
               suppress_callback_exceptions=True, update_title="",
               on_error=report_callback_error)
    app.gate = gate
    app.layout = shell.shell_layout(sign_out=bool(services.settings.api_token))
    shell.register(app, services)
    # Dash's FastAPI backend runs this first-request setup (which collects the CSS and
    # scripts in assets/) only for "/" and "/_dash-*" requests, so a first visit to a
    # deep link such as /recalibrate was served without them; run it now instead.
    app._setup_server()
    return app
