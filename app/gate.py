"""Keep the event loop answering while heavy requests run.

The heavy work (bootstrap intervals, smooth ECE's dynamic program, LOESS) is partly pure
Python and holds the GIL. With 20 such requests each in its own thread, the event loop got
the GIL one switch in 21 and ``/health`` took up to 2 s. Two measures, measured with 2 and
20 concurrent metric requests on the example (``benchmarks/bench_load.py``):

* at most ``CALIBDASH_COMPUTE_SLOTS`` heavy requests (REST routes and Dash callbacks) run at
  once; the others wait as coroutines, which hold no thread and no GIL;
* a 0.5 ms GIL switch interval (Python's default is 5 ms), so the loop thread, when it
  wants the GIL, gets it within a fraction of a millisecond.

Light requests (health, listing datasets, polling jobs, static files, the sign-in page)
and uploads (I/O bound; a slow client must not hold a slot) bypass the slots.
"""

from __future__ import annotations

import asyncio
import re
import sys

from starlette.types import ASGIApp, Receive, Scope, Send

SWITCH_INTERVAL = 0.0005
_HEAVY_REST = re.compile(r"^/api/v1/(datasets/[^/]+/.+|recalibrations/[^/]+/.+|models/[^/]+/.+)$")
_UPLOADS = re.compile(r"^/api/v1/(recalibrations|models)/[^/]+/apply$")


class ComputeGate:
    """A counting semaphore shared by the REST middleware and the Dash callbacks."""

    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        self._semaphore = asyncio.Semaphore(self.slots)

    @property
    def semaphore(self) -> asyncio.Semaphore:
        return self._semaphore

    @staticmethod
    def tune_interpreter() -> None:
        """Shorten the GIL switch interval (process-wide; called when the server starts)."""
        sys.setswitchinterval(SWITCH_INTERVAL)


def heavy_rest_request(method: str, path: str) -> bool:
    """Whether a REST request computes (and so waits for a slot)."""
    if _UPLOADS.match(path):
        return False
    return bool(_HEAVY_REST.match(path)) and method != "DELETE" and not (
        method == "GET" and path.endswith(("/recalibrations", "/model")))


class GateMiddleware:
    """Runs heavy REST requests inside the gate's slots."""

    def __init__(self, app: ASGIApp, gate: ComputeGate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not heavy_rest_request(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        async with self.gate.semaphore:
            await self.app(scope, receive, send)
