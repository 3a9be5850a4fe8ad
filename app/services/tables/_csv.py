"""CSV and gzip CSV uploads: the header checked by hand, then parsed in counted chunks.

pandas renames repeated header names in quadratic time and cannot be interrupted, so
the header row is read here first (a bounded prefix) and repeated names or too many
columns are refused before pandas starts. The (decompressed) bytes then stream through
a reader that counts them against the limit and checks the stop event; rows are
counted chunk by chunk.

A comma-separated file of numbers only (the usual prediction file) is parsed by pandas'
one-pass reader instead (:mod:`app.services.tables._one_pass`), which reads a file of
5 MB or more on several threads; any other file goes to the chunked reader as above.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

import pandas as pd

from app.services.tables._one_pass import numbers_in_one_pass
from app.services.tables.limits import (
    TableLimits,
    check_columns,
    check_stop,
    human_size,
    refuse_repeated,
)
from calibcore.exceptions import CalibrationInputError

_SNIFF_BYTES = 64 * 1024
#: The header line is read by hand up to this many bytes (or 128 per allowed column).
_HEADER_BYTES = 1 << 20
#: Cells per parsed CSV chunk (rows per chunk = this / columns): small enough to refuse a
#: table over the row limit early, large enough that most files are one chunk.
_CHUNK_CELLS = 1 << 22
#: A number written with a decimal comma: 0,3991, -1,5, 2,5e-3, 1.234,5 (dots between
#: thousands).
_COMMA_DECIMAL = re.compile(r"[+-]?(\d{1,3}(\.\d{3})+|\d+),\d+([eE][+-]?\d+)?")
#: A number written with a decimal point: 0.3991, .5, -2.5e-3.
_POINT_DECIMAL = re.compile(r"[+-]?\d*\.\d+([eE][+-]?\d+)?")
#: One separator before three digits (1,234 or 1.234): a decimal mark in one locale, a
#: thousands separator in another, so it says nothing about the file's decimal mark.
_EITHER_MARK = re.compile(r"[+-]?[1-9]\d{0,2}[.,]\d{3}")
#: Digits grouped in threes by dots (1.234 or 1.234.567,89), with a decimal comma.
_DOT_THOUSANDS = re.compile(r"[+-]?[1-9]\d{0,2}(\.\d{3})+(,\d+)?")
#: Digits and dots in any other pattern (a date such as 01.02.2024, a version 1.2.3).
_DOTTED = re.compile(r"\d+(\.\d+)+")


@dataclass(frozen=True)
class CsvTable:
    """A parsed CSV and what the user should know about how it was read."""

    frame: pd.DataFrame
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _NumberFormat:
    """How the file writes numbers: its decimal mark and thousands separator (if any)."""

    decimal: str = "."
    thousands: str | None = None

    def note(self, delimiter: str) -> tuple[str, ...]:
        if self.decimal == ".":
            return ()
        separated = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}.get(
            delimiter, repr(delimiter))
        thousands = (f" and {self.thousands!r} between thousands" if self.thousands else "")
        return (f"read with {self.decimal!r} as the decimal mark{thousands}: the fields are "
                f"separated by {separated} and the numbers written like 0,5, as a "
                "spreadsheet saves CSV in many European locales.",)


class _GuardedStream(io.RawIOBase):
    """The (decompressed) bytes of an upload, counted against the limit as they are read.

    Checks ``stop`` on every read, so pandas' parser can be interrupted, and turns
    decompression errors into an input error naming the file.
    """

    def __init__(self, inner: io.BufferedIOBase, filename: str, compressed: bool,
                 limits: TableLimits, stop: threading.Event | None) -> None:
        super().__init__()
        self._inner = inner
        self._filename = filename
        self._compressed = compressed
        self._limits = limits
        self._stop = stop
        self.n_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        check_stop(self._stop, self._filename)
        try:
            count = self._inner.readinto(buffer)
        except (OSError, EOFError, zlib.error) as exc:
            raise _damaged(self._filename, self._compressed, exc) from exc
        self.n_bytes += count
        if self.n_bytes > self._limits.max_decompressed_bytes:
            size = human_size(self._limits.max_decompressed_bytes)
            raise CalibrationInputError(
                f"the file {self._filename!r} holds more than {size} of CSV text"
                f"{' once decompressed' if self._compressed else ''}; the limit is "
                "CALIBDASH_MAX_DECOMPRESSED_BYTES.", code="table_too_large")
        return int(count)


@contextmanager
def _guarded_open(path: Path, filename: str, compressed: bool, limits: TableLimits,
                  stop: threading.Event | None) -> Iterator[BinaryIO]:
    with open(path, "rb") as raw:
        inner: io.BufferedIOBase = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        with inner, io.BufferedReader(_GuardedStream(inner, filename, compressed, limits,
                                                     stop)) as stream:
            yield stream


def _damaged(filename: str, compressed: bool, exc: BaseException) -> CalibrationInputError:
    if not compressed:
        return CalibrationInputError(f"the file {filename!r} could not be read ({exc}).",
                                     code="unreadable_file")
    problem = ("ends before its compressed data does (a truncated or interrupted upload)"
               if isinstance(exc, EOFError) else f"is damaged ({exc})")
    return CalibrationInputError(
        f"the file {filename!r} is gzip-compressed but {problem}; compress the CSV again "
        "and upload the complete file.", code="unreadable_file")


def read_csv(path: Path, filename: str, compressed: bool, limits: TableLimits,
             stop: threading.Event | None) -> CsvTable:
    """Check the header row, then parse in chunks; the file is read twice, never held.

    The delimiter is sniffed from the first rows, and with it the decimal mark: a file
    whose fields are not separated by commas and whose numbers are written 0,3991 (a
    spreadsheet's CSV in many European locales) is read with a decimal comma, and the
    notes say so.
    """
    header_bytes = _header_bytes(limits)
    with _guarded_open(path, filename, compressed, limits, stop) as stream:
        head = stream.read(header_bytes)
    if not head:
        raise CalibrationInputError(f"the file {filename!r} is empty.", code="empty_file")
    if b"\x00" in head[:_SNIFF_BYTES]:
        raise CalibrationInputError(
            f"the file {filename!r} is neither CSV nor Parquet (it contains binary data). "
            "Upload a CSV (optionally gzip-compressed) or a Parquet file.",
            code="not_a_table")
    text = head.decode("utf-8-sig", errors="replace")
    delimiter = _sniff_delimiter(text[:_SNIFF_BYTES])
    names = _check_header(text, len(head) < header_bytes, delimiter, filename, limits)
    n_columns = len(names)
    number_format = _sniff_number_format(
        text[:_SNIFF_BYTES], delimiter,
        whole=len(head) < header_bytes and len(text) <= _SNIFF_BYTES)
    if not compressed and delimiter == "," and number_format == _NumberFormat():
        frame = numbers_in_one_pass(path, names, text[:_SNIFF_BYTES], filename, limits, stop)
        if frame is not None:
            return CsvTable(frame)
    rows_per_chunk = max(1, min(_CHUNK_CELLS // max(1, n_columns), limits.max_rows + 1))
    with _guarded_open(path, filename, compressed, limits, stop) as stream:
        frame = _parse_csv(stream, delimiter, number_format, rows_per_chunk, filename, limits,
                           stop)
    return CsvTable(frame, number_format.note(delimiter))


def _sniff_delimiter(text: str) -> str:
    lines = text.splitlines()
    sample = "\n".join(lines[:50] if len(lines) > 1 else lines)
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _sniff_number_format(text: str, delimiter: str, *, whole: bool) -> _NumberFormat:
    """The decimal mark (and dots between thousands) of the numbers in ``text``.

    A decimal comma only when commas cannot be the delimiter, some cell is unmistakably a
    number with a decimal comma (0,3991; 12,5) and none is unmistakably one with a decimal
    point (0.25): 1,234 and 1.234 read either way, and a file using both marks is read as
    before (pandas' default) rather than guessed. Dots between thousands are read as such
    only when some cell groups digits so (1.234,5) and no cell holds dots in another
    pattern (a date such as 01.02.2024, which pandas would otherwise read as 1022024).
    """
    if delimiter == ",":
        return _NumberFormat()
    lines = text.splitlines()[1:]  # the header's cells are names
    if not whole:
        lines = lines[:-1]  # the last line may be cut off
    try:
        cells = [cell.strip() for row in csv.reader(lines, delimiter=delimiter) for cell in row]
    except csv.Error:
        return _NumberFormat()
    numbers = [cell for cell in cells if cell and not _EITHER_MARK.fullmatch(cell)]
    comma = any(_COMMA_DECIMAL.fullmatch(cell) for cell in numbers)
    point = any(_POINT_DECIMAL.fullmatch(cell) for cell in numbers)
    if not comma or point:
        return _NumberFormat()
    grouped = [cell for cell in cells if _DOT_THOUSANDS.fullmatch(cell)]
    dotted = [cell for cell in cells if _DOTTED.fullmatch(cell.lstrip("+-"))
              and not _DOT_THOUSANDS.fullmatch(cell)]
    return _NumberFormat(",", "." if grouped and not dotted else None)


def _check_header(text: str, whole_file: bool, delimiter: str, filename: str,
                  limits: TableLimits) -> list[str]:
    """Refuse repeated names and too many columns from the header row; its names.

    ``text`` is the start of the file; the header row may not end within it. Rows are
    split as pandas splits them (same quoting, blank lines skipped), so pandas never meets
    a header that was not checked here.
    """
    buffer = io.StringIO(text, newline="")
    try:
        row = next((cells for cells in csv.reader(buffer, delimiter=delimiter)
                    if not _blank(cells, delimiter)), [])
    except csv.Error as exc:
        raise CalibrationInputError(
            f"the header row of {filename!r} is not readable CSV ({exc}).",
            code="unreadable_file") from exc
    ended = whole_file or buffer.tell() < len(text) or text.endswith(("\n", "\r"))
    names = row if ended else row[:-1]  # the last name may be cut off
    where = "" if ended else f" (in its first {human_size(_header_bytes(limits))})"
    refuse_repeated([name for name in names if name], filename, where)  # pandas names ""
    if not ended:
        raise CalibrationInputError(
            f"the header row of {filename!r} is longer than {human_size(_header_bytes(limits))} "
            f"(more than {len(names):,} column names); at most {limits.max_columns:,} "
            "columns are accepted (CALIBDASH_MAX_COLUMNS).", code="too_many_columns")
    check_columns(len(names), filename, limits)
    return names


def _header_bytes(limits: TableLimits) -> int:
    return max(_HEADER_BYTES, 128 * limits.max_columns)


def _blank(cells: list[str], delimiter: str) -> bool:
    """A line of spaces and tabs only, which pandas skips before the header."""
    return all(not cell.strip(" \t") for cell in cells) and (
        len(cells) <= 1 or delimiter in " \t")


def _parse_csv(stream: IO[bytes], delimiter: str, number_format: _NumberFormat,
               rows_per_chunk: int, filename: str, limits: TableLimits,
               stop: threading.Event | None) -> pd.DataFrame:
    chunks: list[pd.DataFrame] = []
    n_rows = 0
    try:
        with pd.read_csv(stream, sep=delimiter, encoding="utf-8-sig", low_memory=False,
                         decimal=number_format.decimal, thousands=number_format.thousands,
                         chunksize=rows_per_chunk) as reader:
            for chunk in reader:
                n_rows += len(chunk)
                if n_rows > limits.max_rows:
                    raise CalibrationInputError(
                        f"the file {filename!r} has more than {limits.max_rows:,} rows; the "
                        "limit is CALIBDASH_MAX_ROWS.", code="table_too_large")
                check_stop(stop, filename)
                chunks.append(chunk)
    except CalibrationInputError:
        raise
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
    return _concat_chunks(chunks)


def _concat_chunks(chunks: list[pd.DataFrame]) -> pd.DataFrame:
    """One frame; a column read as text in any chunk is text in all, as in a one-pass read.

    The chunks and the result are both held while concatenating: no more than pandas'
    one-pass reader held (every cell's text and its parsed value).
    """
    if len(chunks) == 1:
        return chunks[0]
    # each chunk's dtypes read once (a column lookup per chunk and column took seconds
    # with a thousand columns)
    for position, dtypes in enumerate(zip(*(list(chunk.dtypes) for chunk in chunks),
                                          strict=True)):
        if len(set(map(str, dtypes))) > 1 and any(isinstance(d, pd.StringDtype) for d in dtypes):
            column = chunks[0].columns[position]
            for chunk in chunks:
                if not isinstance(chunk[column].dtype, pd.StringDtype):
                    chunk[column] = chunk[column].astype("str")
    frame = pd.concat(chunks, ignore_index=True)
    chunks.clear()
    return frame
