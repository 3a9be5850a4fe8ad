"""Exceptions about what the store holds."""

from __future__ import annotations


class NotFound(LookupError):
    """A dataset, upload or recalibration id that the store does not hold.

    It lives beside the store rather than with the services that raise it, so that the
    job runner, below the services, can tell a record deleted under a running job from
    a bug.

    Parameters
    ----------
    kind : str
        The record's kind ("dataset", "upload", "recalibration", "model", ...).
    record_id : str
        The id asked for.
    reason : str
        Why it may be missing, and what to do.
    """

    def __init__(self, kind: str, record_id: str, reason: str = "it may have been deleted") -> None:
        super().__init__(f"no {kind} with id {record_id!r}; {reason}.")
        self.kind = kind
        self.record_id = record_id
