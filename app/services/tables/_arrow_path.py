"""Comma-separated files of numbers only, parsed by pyarrow's multi-threaded reader into
the very frame pandas would read (:func:`numbers_by_arrow`); any other file is left to
the chunked pandas reader of :mod:`app.services.tables._csv`."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray
from pyarrow import csv as arrow_csv

from app.services.tables.limits import TableLimits, check_stop
from calibcore.exceptions import CalibrationInputError

#: What pandas reads as missing by default (``pandas.read_csv``'s ``na_values``).
_PANDAS_MISSING = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                   "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                   "nan", "null"]
_MISSING_MARKERS = frozenset(_PANDAS_MISSING)
#: A decimal number or an infinity as pyarrow and pandas read them.
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|Inf|INF|infinity|Infinity)")
#: From this size a float column may be integers pandas keeps as uint64 or text.
_LARGEST_INT = 2.0**63


def numbers_by_arrow(path: Path, names: list[str], head: str, filename: str,
                     limits: TableLimits, stop: threading.Event | None) -> pd.DataFrame | None:
    """The frame pandas would read from a comma-separated file of numbers only, parsed by
    pyarrow's multi-threaded reader; None for any other file (text, booleans, dates,
    empty columns, a row of another length, a header pandas would rename...), which
    pandas then reads in chunks as before.

    Every column must come out int64 or float64 under the header the caller read
    (``names``), with pandas' missing-value markers: the frame is then pandas' own (both
    parse decimal numbers correctly rounded; integers too large for int64, which pandas
    keeps as uint64 or text, send the file to pandas). A file whose first rows
    (``head``, the start of the file) already hold a field that is not a number is left
    to pandas without being parsed twice. The caller passes the first 64 KiB of the head (about
    1,000 rows of ten columns): checking every row of a 1 MiB head took 0.2 s of a
    1.5M-row upload, and a field that is not a number further on still sends the file
    to pandas once pyarrow has read it, as one past the head always did.
    """
    if (path.stat().st_size > limits.max_decompressed_bytes
            or not all(name.strip() for name in names)
            or not _rows_look_numeric(head, len(names))):
        return None
    check_stop(stop, filename)
    try:
        # the system allocator: Arrow's default (mimalloc) spends about 0.6 s setting up
        # its arenas on a process's first large read (1.5M rows: 1.06 s against 0.45 s
        # after, 0.55 s with the system allocator), a fresh server's first upload
        table = arrow_csv.read_csv(
            path, parse_options=arrow_csv.ParseOptions(delimiter=","),
            convert_options=arrow_csv.ConvertOptions(null_values=_PANDAS_MISSING,
                                                     strings_can_be_null=True),
            memory_pool=pa.system_memory_pool())
    except (pa.ArrowException, OSError, ValueError):
        return None
    kinds = table.schema.types
    if table.column_names != names or table.num_rows == 0 or not all(
            pa.types.is_int64(kind) or pa.types.is_float64(kind) for kind in kinds):
        return None
    if table.num_rows > limits.max_rows:
        raise CalibrationInputError(
            f"the file {filename!r} has more than {limits.max_rows:,} rows; the "
            "limit is CALIBDASH_MAX_ROWS.", code="table_too_large")
    check_stop(stop, filename)
    # a column of its own per column, handed over without a copy where it has no missing
    # values, and the table's memory freed as each is converted: one consolidated block
    # was a copy of every column (1.5M rows: 96 MiB, 0.03 s when memory is warm, 0.29 s
    # on a fresh server's first upload, where every page of it was new to the process)
    frame = table.to_pandas(memory_pool=pa.system_memory_pool(), split_blocks=True,
                            self_destruct=True)
    del table
    if any(pa.types.is_float64(kind) and _past_int64(frame.iloc[:, number].to_numpy())
           for number, kind in enumerate(kinds)):
        return None
    return frame


def _rows_look_numeric(head: str, n_columns: int) -> bool:
    """Whether every complete row after the header in ``head`` has ``n_columns`` fields,
    each a number (quoted or not) or one of pandas' missing-value markers."""
    lines = head.splitlines()
    if not head.endswith(("\n", "\r")):
        lines = lines[:-1]  # cut off where ``head`` ends
    rows = [line for line in lines if line.strip()][1:]  # blank lines skipped, as pandas does
    for row in rows:
        fields = row.split(",")
        if len(fields) != n_columns:
            return False
        for field in fields:
            value = field.strip()
            if len(value) > 1 and value[0] == value[-1] == '"':
                value = value[1:-1]
            if value not in _MISSING_MARKERS and not _NUMBER.fullmatch(value):
                return False
    return True


def _past_int64(values: NDArray[np.float64]) -> bool:
    """Whether a float column holds a finite value of magnitude 2**63 or more (it may be
    integers that pandas keeps as uint64 or text); one pass unless it holds missing
    values or infinities. On the NumPy column: 1.5M rows x 7 columns in 5 ms, against
    42 ms for Arrow's min_max over the reader's chunks."""
    if -_LARGEST_INT < values.min() <= values.max() < _LARGEST_INT:  # False with a NaN
        return False
    finite = values[np.isfinite(values)]
    return finite.size > 0 and float(np.abs(finite).max()) >= _LARGEST_INT
