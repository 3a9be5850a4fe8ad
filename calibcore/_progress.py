"""Progress reports from long loops, throttled by time.

Long computations take a ``progress`` callback; a caller cancels one by raising
from it (calibdash's jobs raise ``JobCancelled``), so it must be called often
enough for a cancel to take effect promptly, wherever the time goes. Loops call
a :class:`Heartbeat` as often as they like (every tree, block or epoch): it
reads the clock and calls the callback only when :data:`INTERVAL` seconds have
passed since it last did, with the last values reported.

Private: the public functions document their ``progress`` parameter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: Seconds between two calls of the callback (a cancel waits at most about this long,
#: plus the longest step between two heartbeats).
INTERVAL = 0.25


class Heartbeat:
    """Calls ``callback(*values)`` at most every ``interval`` seconds.

    Parameters
    ----------
    callback : callable or None
        The caller's progress callback; None makes every call a no-op.
    *values
        The values it is called with until :meth:`__call__` is given new ones.
    interval : float
        Seconds between calls; the first is due ``interval`` after construction, so
        work that is over sooner only reports its milestones (:meth:`now`).

    Notes
    -----
    Safe to share between threads: a race at most calls the callback twice.
    """

    __slots__ = ("_callback", "_due", "_interval", "_values")

    def __init__(self, callback: Callable[..., None] | None, *values: Any,
                 interval: float = INTERVAL) -> None:
        self._callback = callback
        self._values = values
        self._interval = interval
        self._due = time.monotonic() + interval

    def __call__(self, *values: Any) -> None:
        """Remember ``values`` (if any) and call the callback with them when it is due."""
        if values:
            self._values = values
        if self._callback is None:
            return
        moment = time.monotonic()
        if moment >= self._due:
            self._due = moment + self._interval
            self._callback(*self._values)

    def now(self, *values: Any) -> None:
        """Remember ``values`` (if any) and call the callback at once (a milestone)."""
        if values:
            self._values = values
        if self._callback is not None:
            self._due = time.monotonic() + self._interval
            self._callback(*self._values)


def silent() -> Heartbeat:
    """A heartbeat that reports nothing (for callers without a callback)."""
    return Heartbeat(None)
