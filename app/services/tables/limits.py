"""How large an uploaded table may be, and the checks every reader shares."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from app.config import Settings
from calibcore.exceptions import CalibrationInputError

#: Repeated or nested column names shown in a message (the rest are counted).
SHOWN_NAMES = 5
_DEFAULTS = Settings.model_fields


@dataclass(frozen=True)
class TableLimits:
    """The largest table an upload may hold (``CALIBDASH_MAX_*`` settings)."""

    max_decompressed_bytes: int = _DEFAULTS["max_decompressed_bytes"].default
    max_rows: int = _DEFAULTS["max_rows"].default
    max_columns: int = _DEFAULTS["max_columns"].default

    @classmethod
    def from_settings(cls, settings: Settings) -> TableLimits:
        return cls(max_decompressed_bytes=settings.max_decompressed_bytes,
                   max_rows=settings.max_rows, max_columns=settings.max_columns)


DEFAULT_LIMITS = TableLimits()


def check_stop(stop: threading.Event | None, filename: str) -> None:
    """Give up reading once the server is shutting down."""
    if stop is not None and stop.is_set():
        raise CalibrationInputError(
            f"reading {filename!r} was cancelled because the server is shutting down; upload "
            "it again once the server is back.", code="cancelled")


def check_columns(n_columns: int, filename: str, limits: TableLimits) -> None:
    if n_columns > limits.max_columns:
        raise CalibrationInputError(
            f"the file {filename!r} has {n_columns:,} columns; at most "
            f"{limits.max_columns:,} are accepted (CALIBDASH_MAX_COLUMNS).",
            code="too_many_columns")


def refuse_repeated(names: list[str], filename: str, where: str = "") -> None:
    """Refuse repeated column names, showing the first few and how often the first repeats."""
    counts = Counter(names)
    repeated = [name for name, count in counts.items() if count > 1]
    if not repeated:
        return
    raise CalibrationInputError(
        f"the header of {filename!r} repeats {len(repeated):,} column "
        f"name{'s' if len(repeated) > 1 else ''}{where}: {shown_names(repeated)} "
        f"({short_name(repeated[0])} "
        f"appears {counts[repeated[0]]:,} times). Give every column its own name.",
        code="duplicate_columns", column=repeated[0][:200])


def shown_names(names: Sequence[str]) -> str:
    """The first :data:`SHOWN_NAMES` column names for a message, then how many more."""
    shown = ", ".join(short_name(name) for name in names[:SHOWN_NAMES])
    return shown + (f" and {len(names) - SHOWN_NAMES:,} more" if len(names) > SHOWN_NAMES
                    else "")


def short_name(name: str) -> str:
    """A column name for a message: quoted, and cut if very long."""
    return repr(name) if len(name) <= 40 else repr(name[:40]) + "..."


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size:,} bytes" if unit == "bytes" else f"{value:.3g} {unit}"
        value /= 1024
    return f"{size:,} bytes"
