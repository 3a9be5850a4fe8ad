"""The progress of :func:`calibcore.variable.rank_variables`, reported from its threads:
the variables' curves (fitted concurrently) and their permutation nulls (drawn in a
background thread meanwhile).

Private: used by :mod:`calibcore.variable.ranking` only.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from calibcore._progress import Heartbeat

T = TypeVar("T")

#: Share of the curves' side of the progress taken by validating and binning the variables.
_PREPARE_SHARE = 0.1
#: Seconds between progress reports while waiting for a permutation null.
_WAIT_SECONDS = 0.1


class CurvesStopped(Exception):
    """The ranking ended (an error or a cancel elsewhere): the curves stop too."""


class RankingProgress:
    """Progress of a ranking from its threads: ``done`` (of ``total`` variables) is
    the mean of the fractions of curves and of permutations done, never decreasing.

    The curves' fraction is :data:`_PREPARE_SHARE` for validating and binning, the rest
    shared equally by the variables' curves (fitted concurrently); a curve's progress
    raises :class:`CurvesStopped` once ``stop`` is set.
    """

    def __init__(self, total: int, n_permutations: int, heartbeat: Heartbeat,
                 stop: threading.Event) -> None:
        self._total = total
        self._n_permutations = n_permutations
        self._heartbeat = heartbeat
        self._stop = stop
        self._lock = threading.Lock()
        self._prepared = 0.0
        self._curve_fractions = [0.0] * total
        self._curves = 0.0
        self._drawn = 0
        self._needed = 0
        self._done = 0.0

    def prepared(self, fraction: float) -> None:
        with self._lock:
            self._prepared = fraction
            self._update_curves()
        self._report()

    def curve(self, position: int, fraction: float) -> None:
        """Variable ``position``'s curve is ``fraction`` done."""
        if self._stop.is_set():
            raise CurvesStopped
        with self._lock:
            self._curve_fractions[position] = max(self._curve_fractions[position], fraction)
            self._update_curves()
        self._report()

    def _update_curves(self) -> None:
        fitted = sum(self._curve_fractions) / self._total if self._total else 1.0
        self._curves = max(self._curves, _PREPARE_SHARE * self._prepared
                           + (1.0 - _PREPARE_SHARE) * fitted)

    def expect_nulls(self, n_nulls: int) -> None:
        with self._lock:
            self._needed = n_nulls * self._n_permutations
        self._report()

    def permutation_drawn(self) -> None:
        with self._lock:
            self._drawn += 1
        self._report()

    def waiting(self) -> None:
        self._report()

    def finished(self) -> None:
        self._heartbeat.now(self._total, self._total)

    def _report(self) -> None:
        with self._lock:
            permutations = self._drawn / self._needed if self._needed else None
            fraction = (self._curves if permutations is None
                        else (self._curves + permutations) / 2.0)
            self._done = max(self._done, min(fraction, 1.0) * self._total)
            done = self._done
        self._heartbeat(done, self._total)


def wait_for(future: Future[T], tracker: RankingProgress) -> T:
    """The future's result, reporting progress while it is not ready."""
    while True:
        try:
            return future.result(timeout=_WAIT_SECONDS)
        except FutureTimeout:
            tracker.waiting()
