"""Benchmark rows and the timing helper every ``bench_*.py`` module uses."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Row:
    """One benchmark measurement.

    ``target_seconds`` is the time limit the point must meet (None when the point is a ratio);
    ``peer``/``peer_seconds`` name a peer run side by side on the same data, and
    ``target_ratio`` (if set) is the largest acceptable ours/peer ratio
    (or, with ``speedup=True``, the smallest acceptable peer/ours speed-up);
    ``ratio_range`` (if set) bounds the ours/peer ratio on both sides (an estimate
    against the measured time); ``mib``/``target_mib`` are a measured memory size and
    the most it may be (a row that measures memory, not time).
    """

    case: str
    seconds: float
    target_seconds: float | None = None
    peer: str | None = None
    peer_seconds: float | None = None
    target_ratio: float | None = None
    speedup: bool = False
    note: str = ""
    ratio_range: tuple[float, float] | None = None
    mib: float | None = None
    target_mib: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.peer_seconds is None:
            return None
        if self.speedup:
            return self.peer_seconds / self.seconds
        return self.seconds / self.peer_seconds

    @property
    def passed(self) -> bool:
        ok = self.target_seconds is None or self.seconds <= self.target_seconds
        if self.target_ratio is not None and self.ratio is not None:
            ok &= (
                self.ratio >= self.target_ratio if self.speedup else self.ratio <= self.target_ratio
            )
        if self.ratio_range is not None and self.ratio is not None:
            ok &= self.ratio_range[0] <= self.ratio <= self.ratio_range[1]
        if self.target_mib is not None and self.mib is not None:
            ok &= self.mib <= self.target_mib
        return ok


def timed(function: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    """Best wall-clock seconds over ``repeat`` calls, and the last result."""
    best = float("inf")
    result: T
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result
