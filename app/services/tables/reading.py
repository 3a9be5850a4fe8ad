"""Reading an uploaded table, whatever its format, within the limits."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from app.services.tables._csv import read_csv
from app.services.tables._parquet import ParquetTable, read_parquet
from app.services.tables.limits import (
    DEFAULT_LIMITS,
    TableLimits,
    check_columns,
    refuse_repeated,
    shown_names,
)
from calibcore.exceptions import CalibrationInputError

_PARQUET_MAGIC = b"PAR1"
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class LoadedTable:
    """A parsed upload, the nested Parquet columns left out, and what the user should know."""

    frame: pd.DataFrame
    dropped_columns: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def read_table(path: Path, filename: str = "", *, limits: TableLimits = DEFAULT_LIMITS,
               stop: threading.Event | None = None) -> pd.DataFrame:
    """The frame of :func:`load_table` (its warnings dropped)."""
    return load_table(path, filename, limits=limits, stop=stop).frame


def load_table(path: Path, filename: str = "", *, limits: TableLimits = DEFAULT_LIMITS,
               stop: threading.Event | None = None) -> LoadedTable:
    """Parse an uploaded file, detecting the format from its bytes.

    Parameters
    ----------
    path : Path
        The uploaded bytes (a temporary file: never named in messages).
    filename : str
        The name the user gave the file, used in every message.
    limits : TableLimits
        Largest decompressed size, rows and columns; enforced while the file streams.
    stop : threading.Event, optional
        When set (the server is shutting down), parsing stops between chunks.

    Raises
    ------
    CalibrationInputError
        Empty, damaged or over-limit file, not a table, duplicate or missing header,
        or cancelled (``code`` says which).
    """
    with open(path, "rb") as stream:
        magic = stream.read(len(_PARQUET_MAGIC))
    if not magic:
        raise CalibrationInputError(f"the file {filename!r} is empty.", code="empty_file")
    if magic.startswith(_PARQUET_MAGIC):
        table = _without_nested(read_parquet(path, filename, limits, stop))
    else:
        csv_table = read_csv(path, filename, magic.startswith(_GZIP_MAGIC), limits, stop)
        table = LoadedTable(csv_table.frame, warnings=csv_table.notes)
    _check_frame(table.frame, filename, limits)
    huge = _huge_integers_as_text(table.frame)
    if huge:
        table = replace(table, warnings=(*table.warnings, _huge_integers_warning(huge)))
    return table


def _huge_integers_as_text(frame: pd.DataFrame) -> list[str]:
    """Columns of whole numbers past 64 bits (pandas keeps them as Python integers, which
    no table format stores) turned into text, as identifiers (account or order numbers);
    their names."""
    huge = [str(name) for name, column in frame.items() if column.dtype == object
            and pd.api.types.infer_dtype(column, skipna=True) == "integer"]
    for name in huge:
        frame[name] = frame[name].astype("str")
    return huge


def _huge_integers_warning(names: list[str]) -> str:
    which = "column" if len(names) == 1 else "columns"
    return (f"{which} {shown_names(names)} hold{'s' if len(names) == 1 else ''} whole numbers too "
            "large for 64 bits: read as text (identifiers such as account numbers), not "
            "as numbers.")


def _without_nested(parquet: ParquetTable) -> LoadedTable:
    """The flat columns, with a warning naming the nested ones left out."""
    nested = parquet.nested
    if not nested:
        return LoadedTable(parquet.frame)
    warning = (f"{len(nested):,} column{'s' if len(nested) > 1 else ''} of nested values "
               f"(lists, structs or maps) left out, as calibdash cannot analyse them: "
               f"{shown_names(nested)}.")
    return LoadedTable(parquet.frame, nested, (warning,))


def _check_frame(frame: pd.DataFrame, filename: str, limits: TableLimits) -> None:
    if frame.shape[1] == 0:
        raise CalibrationInputError(f"the file {filename!r} has no columns.", code="empty_file")
    check_columns(frame.shape[1], filename, limits)
    if frame.shape[0] > limits.max_rows:
        raise CalibrationInputError(
            f"the file {filename!r} has {frame.shape[0]:,} rows; at most {limits.max_rows:,} "
            "are accepted (CALIBDASH_MAX_ROWS).", code="table_too_large")
    if frame.shape[0] == 0:
        raise CalibrationInputError(
            f"the file {filename!r} has a header but no rows.", code="empty_table")
    names = [str(c) for c in frame.columns]
    unnamed = [i for i, name in enumerate(names) if not name.strip() or name.startswith("Unnamed:")]
    if len(unnamed) == len(names) or (frame.shape[1] == 1 and not names[0].strip()):
        raise CalibrationInputError(f"the file {filename!r} has no header row.",
                                    code="no_header")
    frame.columns = names
    refuse_repeated(names, filename)
