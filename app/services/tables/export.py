"""Writing tables for download without spreadsheet formula injection.

Text cells (and column names) that start with ``=``, ``+``, ``-`` or ``@`` (or a tab or
carriage return) would run as formulas when the download is opened in a spreadsheet, so
they are escaped with a leading quote.
"""

from __future__ import annotations

import csv
import ctypes
import ctypes.util
import io
import os
from collections.abc import Iterator
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

ExportFormat = Literal["csv", "parquet"]
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def escape_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix text cells and column names that a spreadsheet would read as a formula with a
    quote."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        text = values.astype("string")
        risky = text.str.startswith(_FORMULA_PREFIXES).fillna(False).astype(bool)
        if risky.any():
            out[column] = values.astype(object).where(~risky, "'" + text[risky].astype(str))
    out.columns = [_escaped(name) for name in out.columns]
    return out


def _escaped(name: object) -> object:
    return "'" + name if isinstance(name, str) and name.startswith(_FORMULA_PREFIXES) else name


#: Rows serialized at a time: a few tens of MiB of CSV, whatever the table's size.
CHUNK_ROWS = 100_000


def export_bytes(frame: pd.DataFrame, export_format: ExportFormat) -> bytes:
    """Serialize for download: CSV (formula-escaped) or Parquet."""
    return b"".join(export_chunks(frame, export_format))


def export_chunks(frame: pd.DataFrame, export_format: ExportFormat,
                  rows: int = CHUNK_ROWS) -> Iterator[bytes]:
    """The serialized table in pieces of ``rows`` rows, for a streamed download.

    The CSV or Parquet file is never held whole: a 1.5M-row download held the table, its
    formula-escaped copy and the whole CSV text at once (1.3 GiB above the table).
    """
    if export_format == "parquet":
        yield from _parquet_chunks(frame, rows)
        return
    for start in range(0, max(len(frame), 1), rows):
        part = escape_formulas(frame.iloc[start:start + rows])
        if start == 0:
            yield _csv_header(part.columns)
        yield _csv_rows(part)


def _csv_header(columns: pd.Index) -> bytes:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerow([str(name) for name in columns])
    return text.getvalue().encode("utf-8")


def _csv_rows(part: pd.DataFrame) -> bytes:
    """Rows without header: Arrow's CSV writer (about 8x pandas' ``to_csv``; the same
    numbers read back), pandas for columns Arrow cannot type (mixed objects)."""
    try:
        table = pa.Table.from_pandas(part, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError):
        return part.to_csv(index=False, header=False).encode("utf-8")
    sink = io.BytesIO()
    pa_csv.write_csv(table, sink, pa_csv.WriteOptions(include_header=False,
                                                     quoting_style="needed"))
    return sink.getvalue()


class _Collect(io.RawIOBase):
    """A write-only sink whose bytes are taken out after each row group."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def _parquet_chunks(frame: pd.DataFrame, rows: int) -> Iterator[bytes]:
    sink = _Collect()
    schema = pa.Schema.from_pandas(frame, preserve_index=False)
    with pq.ParquetWriter(sink, schema) as writer:
        for start in range(0, max(len(frame), 1), rows):
            writer.write_table(pa.Table.from_pandas(frame.iloc[start:start + rows],
                                                    schema=schema, preserve_index=False))
            yield sink.take()
    yield sink.take()


#: ``mallopt`` parameter number of glibc's mmap threshold.
_M_MMAP_THRESHOLD = -3
#: ``mallopt`` parameter number of glibc's most heap arenas.
_M_ARENA_MAX = -8
#: The server's mmap threshold (:func:`share_one_heap`): glibc's largest dynamic one.
SHARED_HEAP_THRESHOLD = 32 << 20


def share_one_heap(threshold: int = SHARED_HEAP_THRESHOLD) -> bool:
    """Have every thread allocate from one glibc heap, mapping only blocks of
    ``threshold`` bytes or more on their own; True if the allocator took it.

    Each thread's own heap arena is what kept a copy of the working arrays per thread;
    mapping every block from 4 MiB on cured that at a price: each such array is fresh
    pages from the kernel, faulted in and zeroed, then unmapped.
    The 1.5M-row overview spent 1.2-1.5 s in the kernel that way beside 1.8 s of
    computing (the three requests in one process: 415,000 page faults). With one heap for
    all threads a freed array is reused by whichever thread asks next: 0.4-0.9 s in the
    kernel (32,000 faults in one process). What the heap keeps free goes back with
    :func:`release_memory` once no computation is under way (the result cache and the
    job runner call it), so the peak of ``benchmarks/bench_path.py``'s million-row path
    stays at 1,301 MiB (1,058 MiB with every large block mapped; the target is 1,500).
    Elsewhere than glibc this is a no-op (False).
    """
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(_M_ARENA_MAX, 1)) and bool(mallopt(_M_MMAP_THRESHOLD, int(threshold)))


def ordinary_pages_for_arrays() -> bool:
    """Have NumPy leave its large arrays on the kernel's ordinary pages instead of asking
    for transparent huge pages (``madvise(MADV_HUGEPAGE)``, NumPy's default on Linux);
    True if it took it, False where NumPy has no such switch or the operator chose with
    ``NUMPY_MADVISE_HUGEPAGE`` (which then stands).

    On a virtual machine whose host takes back the guest's free memory (virtio-balloon
    free page reporting, as on the 2-core machine of ``benchmarks/``) the free blocks
    the guest reports are those of huge-page size, so each huge page faulted in for a new
    array is one the host must back again: touching 1 GiB of memory the guest had freed
    a few seconds before took 2.0 s in the kernel there, against 0.19 s right after.
    Ordinary pages come first from what the guest freed last, still backed. The first
    upload and overview of a 1.5M-row file on a fresh server (what
    ``benchmarks/bench_path.py`` times against ``pandas.read_csv``) spent 0.53 s in the
    kernel on average during the overview with huge pages, 0.36 s without, and took 2.40
    s against 2.22 s in all (four and eight fresh servers); later runs were unchanged.
    """
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return False
    # the switch NumPy's import turns with that variable (numpy._core: NumPy 2)
    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    set_huge_pages = getattr(switch, "_set_madvise_hugepage", None)
    if set_huge_pages is None:
        return False
    set_huge_pages(False)
    return True


def release_memory() -> None:
    """Hand freed memory back to the operating system after a large export.

    Python and pandas free what a download allocated, but glibc keeps the pages in its
    arenas and Arrow in its pool, so the server's resident size only grew. ``malloc_trim``
    (glibc) and Arrow's ``release_unused`` return them; elsewhere this is a no-op.
    """
    pa.default_memory_pool().release_unused()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
    if trim is not None:
        trim(0)
