"""Comma-separated files of numbers only, parsed by pandas' one-pass reader
(:func:`numbers_in_one_pass`); any other file is left to the chunked reader of
:mod:`app.services.tables._csv`, which counts rows and checks the stop event between
chunks.

The one-pass reader splits a file of 5 MB or more between threads (pandas 3: 1.5M rows
x 8 columns in 0.26 s on two cores, with a peak of 190 MiB), where pyarrow's reader,
which took this path before, took 0.34 s (0.43 s on a process's first read) and 250 MiB
for the same frame, and the chunked reader 0.6 s.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pandas as pd

from app.services.tables.limits import TableLimits, check_stop
from calibcore.exceptions import CalibrationInputError

#: What pandas reads as missing by default (``pandas.read_csv``'s ``na_values``).
_MISSING_MARKERS = frozenset(
    ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
     "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"])
#: A decimal number or an infinity as pandas reads them.
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|Inf|INF|infinity|Infinity)")


def numbers_in_one_pass(path: Path, names: list[str], head: str, filename: str,
                        limits: TableLimits, stop: threading.Event | None
                        ) -> pd.DataFrame | None:
    """The frame of a comma-separated file of numbers only, read by pandas in one pass;
    None for any other file (text, booleans, dates, integers past int64, a header pandas
    would rename...), which the chunked reader then reads as before.

    pandas infers each column's type per block of the file and merges the blocks: every
    column must come out int64 or float64 under the header the caller read (``names``),
    which for a file of numbers is the frame the chunked reader gives (blocks of integers
    and of floats merge to float64 in both). A column that holds text further on comes
    out mixed (object), and the file goes to the chunked reader; so does an integer past
    64 bits. pandas warns of mixed blocks in a file read in one thread; where warnings
    are errors that warning ends the read the same way (the process-wide warning filters
    are not changed here: doing so is not safe beside other threads). A file whose first
    rows (``head``, the start of the file) already hold a field that is not a number is
    left to the chunked reader without being parsed twice. The caller passes the first
    64 KiB of the head (about 1,000 rows of ten columns): checking every row of a 1 MiB
    head took 0.2 s of a 1.5M-row upload.

    The file's size is at most the limit on CSV text, so the one pass holds no more
    than the chunked reader would; the row limit is checked once it has read the file.
    """
    if (path.stat().st_size > limits.max_decompressed_bytes
            or not all(name.strip() for name in names)
            or not _rows_look_numeric(head, len(names))):
        return None
    check_stop(stop, filename)
    try:
        frame = _read_whole(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, pd.errors.DtypeWarning,
            UnicodeDecodeError, ValueError, OverflowError, OSError):
        return None
    if ([str(name) for name in frame.columns] != names or frame.shape[0] == 0
            or not all(kind in ("int64", "float64") for kind in map(str, frame.dtypes))):
        return None
    if frame.shape[0] > limits.max_rows:
        raise CalibrationInputError(
            f"the file {filename!r} has more than {limits.max_rows:,} rows; the "
            "limit is CALIBDASH_MAX_ROWS.", code="table_too_large")
    check_stop(stop, filename)
    return frame


def _read_whole(path: Path) -> pd.DataFrame:
    """The file read by pandas in one pass."""
    return pd.read_csv(path, encoding="utf-8-sig")


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
