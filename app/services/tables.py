"""Reading uploaded tables (CSV, gzip CSV, Parquet) and writing exports safely."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path
from typing import Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from calibcore.exceptions import CalibrationInputError

ExportFormat = Literal["csv", "parquet"]
_PARQUET_MAGIC = b"PAR1"
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 64 * 1024
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def read_table(path: Path, filename: str = "") -> pd.DataFrame:
    """Parse an uploaded file into a DataFrame, detecting the format from its bytes.

    Raises
    ------
    CalibrationInputError
        Empty file, not a table, unreadable CSV/Parquet, duplicate or empty header.
    """
    with open(path, "rb") as stream:
        head = stream.read(_SNIFF_BYTES)
    if not head:
        raise CalibrationInputError(f"the file {filename!r} is empty.", code="empty_file")
    if head.startswith(_PARQUET_MAGIC):
        frame = _read_parquet(path, filename)
    else:
        compressed = head.startswith(_GZIP_MAGIC)
        if compressed:
            try:
                with gzip.open(path, "rb") as stream:
                    head = stream.read(_SNIFF_BYTES)
            except (OSError, EOFError) as exc:
                raise CalibrationInputError(
                    f"the file {filename!r} looks gzip-compressed but cannot be decompressed: "
                    f"{exc}.", code="unreadable_file") from exc
        frame = _read_csv(path, filename, head, compressed)
    return _checked_frame(frame, filename)


def _read_parquet(path: Path, filename: str) -> pd.DataFrame:
    try:
        return pq.read_table(path).to_pandas()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CalibrationInputError(
            f"the file {filename!r} is not a readable Parquet file: {exc}.",
            code="unreadable_file") from exc


def _read_csv(path: Path, filename: str, head: bytes, compressed: bool) -> pd.DataFrame:
    if b"\x00" in head:
        raise CalibrationInputError(
            f"the file {filename!r} is neither CSV nor Parquet (it contains binary data). "
            "Upload a CSV (optionally gzip-compressed) or a Parquet file.",
            code="not_a_table")
    delimiter = _sniff_delimiter(head.decode("utf-8-sig", errors="ignore"))
    try:
        return pd.read_csv(path, sep=delimiter, encoding="utf-8-sig",
                           compression="gzip" if compressed else None, low_memory=False)
    except UnicodeDecodeError as exc:
        raise CalibrationInputError(
            f"the file {filename!r} is not UTF-8 text (byte {exc.start}); save the CSV as UTF-8.",
            code="not_utf8") from exc
    except pd.errors.EmptyDataError as exc:
        raise CalibrationInputError(f"the file {filename!r} has no columns.",
                                    code="empty_file") from exc
    except (pd.errors.ParserError, ValueError, OSError, EOFError) as exc:
        raise CalibrationInputError(
            f"the file {filename!r} could not be parsed as CSV: {exc}", code="unreadable_file"
        ) from exc


def _sniff_delimiter(text: str) -> str:
    lines = text.splitlines()
    sample = "\n".join(lines[:50] if len(lines) > 1 else lines)
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _checked_frame(frame: pd.DataFrame, filename: str) -> pd.DataFrame:
    if frame.shape[1] == 0:
        raise CalibrationInputError(f"the file {filename!r} has no columns.", code="empty_file")
    if frame.shape[0] == 0:
        raise CalibrationInputError(
            f"the file {filename!r} has a header but no rows.", code="empty_table")
    names = [str(c) for c in frame.columns]
    unnamed = [i for i, name in enumerate(names) if not name.strip() or name.startswith("Unnamed:")]
    if len(unnamed) == len(names) or (frame.shape[1] == 1 and not names[0].strip()):
        raise CalibrationInputError(f"the file {filename!r} has no header row.",
                                    code="no_header")
    frame.columns = names
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise CalibrationInputError(
            f"the file {filename!r} repeats column names {', '.join(map(repr, duplicated))}.",
            code="duplicate_columns", column=duplicated[0])
    return frame


def escape_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix text cells that a spreadsheet would read as a formula with a quote (SPEC §7)."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        text = values.astype("string")
        risky = text.str.startswith(_FORMULA_PREFIXES).fillna(False).astype(bool)
        if risky.any():
            out[column] = values.astype(object).where(~risky, "'" + text[risky].astype(str))
    return out


def export_bytes(frame: pd.DataFrame, export_format: ExportFormat) -> bytes:
    """Serialize for download: CSV (formula-escaped) or Parquet."""
    if export_format == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    return escape_formulas(frame).to_csv(index=False).encode("utf-8")
