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


class JobCancelled(Exception):
    """Raised inside a job when the user cancelled it."""


@dataclass
class Progress:
    """What a running job reports: a fraction in [0, 1] and a message.

    ``listener`` (set by the runner) is called with the progress at most every
    :data:`LISTENER_SECONDS` of updates, to persist it; between those an update only
    checks for cancellation and sets attributes, so long loops may report as often as
    they like.
    """

    fraction: float = 0.0
    message: str = "queued"
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    #: Optional JSON-able structure, e.g. per-step progress of a multi-step job.
    detail: Any = None
    listener: Callable[[Progress], None] | None = field(default=None, repr=False)
    _listener_due: float = field(default=0.0, repr=False)

    def update(self, fraction: float, message: str | None = None, *,
               detail: Any = None) -> None:
        """Report progress; raises :class:`JobCancelled` if the job was cancelled."""
        if self.cancel_requested.is_set():
            raise JobCancelled
        self.fraction = min(max(float(fraction), 0.0), 1.0)
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

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able view of the job's state."""
        return {
            "id": self.id, "kind": self.kind, "status": self.status,
            "progress": round(self.progress.fraction, 4), "message": self.progress.message,
            "detail": self.progress.detail,
            "result": self.result if self.status == "succeeded" else None,
            "error": self.error, "created": self.created, "finished": self.finished,
            "params": self.params,
        }
