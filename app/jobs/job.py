"""A job's state: its progress (with cancellation) and its outcome."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.store import now

JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "interrupted"]
#: Statuses of a job that has not ended.
ACTIVE: tuple[JobStatus, ...] = ("queued", "running")
#: What an interrupted job says (its message and its error's message).
INTERRUPTED_MESSAGE = "the server restarted while this job ran; run it again"
#: Seconds between two calls of a progress listener (writes of a running job's record).
LISTENER_SECONDS = 1.0
#: A time-left estimate needs the fraction past this and this many seconds of running:
#: before that, extrapolating from a few early (often cheap) steps misleads.
ETA_MIN_FRACTION = 0.03
ETA_MIN_SECONDS = 1.0
#: Weight of a new extrapolation in the smoothed estimate (the rest is the old estimate,
#: counted down): steps of uneven cost make the raw extrapolation jump.
ETA_SMOOTHING = 0.3


class JobCancelled(Exception):
    """Raised inside a job when the user cancelled it."""


@dataclass
class Progress:
    """What a running job reports: a fraction in [0, 1] and a message.

    ``listener`` (set by the runner) is called with the progress at most every
    :data:`LISTENER_SECONDS` of updates, to persist it; between those an update only
    checks for cancellation and sets attributes, so long loops may report as often as
    they like.

    :meth:`eta_seconds` estimates the time left from the time since :meth:`start` and
    the fraction done (linear extrapolation, smoothed); ``clock`` (seconds, monotonic)
    is injectable for tests.
    """

    fraction: float = 0.0
    message: str = "queued"
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    #: Optional JSON-able structure, e.g. per-step progress of a multi-step job.
    detail: Any = None
    listener: Callable[[Progress], None] | None = field(default=None, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    _listener_due: float = field(default=0.0, repr=False)
    _started: float | None = field(default=None, repr=False)
    #: The smoothed estimate of the seconds left and the clock when it was made.
    _eta: float | None = field(default=None, repr=False)
    _eta_at: float = field(default=0.0, repr=False)

    def start(self) -> None:
        """Start the clock of the time-left estimate (the runner calls it as the job runs)."""
        self._started = self.clock()
        self._eta = None

    def update(self, fraction: float, message: str | None = None, *,
               detail: Any = None) -> None:
        """Report progress; raises :class:`JobCancelled` if the job was cancelled."""
        if self.cancel_requested.is_set():
            raise JobCancelled
        fraction = min(max(float(fraction), 0.0), 1.0)
        if fraction != self.fraction:
            self.fraction = fraction
            self._estimate()
        if message is not None:
            self.message = message
        if detail is not None:
            self.detail = detail
        if self.listener is not None:
            moment = time.monotonic()
            if moment >= self._listener_due:
                self._listener_due = moment + LISTENER_SECONDS
                self.listener(self)

    def check(self) -> None:
        """Raise :class:`JobCancelled` if the job was cancelled (a heartbeat without news)."""
        self.update(self.fraction)

    def _extrapolated(self, moment: float) -> float | None:
        """Seconds left if the rest goes at the average pace so far; None too early."""
        if self._started is None or not ETA_MIN_FRACTION <= self.fraction < 1.0:
            return None
        elapsed = moment - self._started
        if elapsed < ETA_MIN_SECONDS:
            return None
        return elapsed * (1.0 - self.fraction) / self.fraction

    def _estimate(self) -> None:
        moment = self.clock()
        raw = self._extrapolated(moment)
        if raw is None:
            return
        if self._eta is None:
            self._eta = raw
        else:
            counted_down = max(self._eta - (moment - self._eta_at), 0.0)
            self._eta = ETA_SMOOTHING * raw + (1.0 - ETA_SMOOTHING) * counted_down
        self._eta_at = moment

    def elapsed_seconds(self) -> float | None:
        """Seconds since :meth:`start`, or None before it."""
        return None if self._started is None else self.clock() - self._started

    def eta_seconds(self) -> float | None:
        """Estimated seconds left, or None before the estimate is meaningful.

        The smoothed estimate counts down between updates; once it is overdue (the work
        slowed or stands still) the extrapolation from now takes over, so a stalled job's
        estimate grows instead of sitting at zero.
        """
        if self._eta is None:
            return None
        moment = self.clock()
        counted_down = self._eta - (moment - self._eta_at)
        if counted_down > 0:
            return counted_down
        return self._extrapolated(moment)


@dataclass
class Job:
    """A submitted computation and its outcome.

    ``params`` is a small JSON description of what was asked (the dataset and the
    request's parameters), kept with the job's record so it can be run again.
    """

    id: str
    kind: str
    status: JobStatus = "queued"
    progress: Progress = field(default_factory=Progress)
    result: Any = None
    error: dict[str, Any] | None = None
    created: str = field(default_factory=now)
    finished: str | None = None
    params: dict[str, Any] | None = None
    #: The cost estimate made before it started (:meth:`app.services.cost.CostEstimate.as_dict`).
    estimate: dict[str, Any] | None = None

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able view of the job's state."""
        return {
            "id": self.id, "kind": self.kind, "status": self.status,
            "progress": round(self.progress.fraction, 4), "message": self.progress.message,
            "detail": self.progress.detail,
            "eta_seconds": self._eta_seconds(),
            "elapsed_seconds": self._elapsed_seconds(),
            "result": self.result if self.status == "succeeded" else None,
            "error": self.error, "created": self.created, "finished": self.finished,
            "params": self.params, "estimate": self.estimate,
        }

    def _elapsed_seconds(self) -> float | None:
        elapsed = self.progress.elapsed_seconds() if self.status == "running" else None
        return None if elapsed is None else round(elapsed, 1)

    def _eta_seconds(self) -> float | None:
        if self.status != "running":
            return None
        eta = self.progress.eta_seconds()
        return None if eta is None else round(eta, 1)
