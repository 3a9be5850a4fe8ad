"""Parquet uploads: sizes checked from the footer, then decoded in counted batches."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from app.services.tables.limits import (
    TableLimits,
    check_columns,
    check_stop,
    human_size,
    refuse_repeated,
)
from calibcore.exceptions import CalibrationInputError

_PARQUET_BATCH_ROWS = 1 << 16


@dataclass(frozen=True)
class ParquetTable:
    """The flat columns of a Parquet file and the names of the nested ones left out."""

    frame: pd.DataFrame
    nested: tuple[str, ...]


def read_parquet(path: Path, filename: str, limits: TableLimits,
                 stop: threading.Event | None) -> ParquetTable:
    """Read the flat columns of a Parquet file; nested ones (list, struct, map) are left out.

    Only the flat columns are decoded, in batches whose bytes and rows are counted;
    pyarrow's messages are passed on without the temporary file's path.
    """
    try:
        with pq.ParquetFile(path) as parquet:
            schema = parquet.schema_arrow
            refuse_repeated(schema.names, filename)
            nested = tuple(f.name for f in schema if pa.types.is_nested(f.type))
            flat = [f.name for f in schema if f.name not in nested]
            _check_parquet_metadata(parquet.metadata, len(flat), filename, limits)
            if not flat:
                raise CalibrationInputError(
                    f"every column of {filename!r} holds nested values (lists, structs or "
                    "maps); calibdash needs plain numbers or text.", code="nested_columns")
            batches = _parquet_batches(parquet, flat, filename, limits, stop)
        projected = pa.schema([schema.field(name) for name in flat], metadata=schema.metadata)
        table = pa.Table.from_batches(batches, schema=projected)
        del batches  # the table is now the only owner, so conversion frees it as it goes
        frame = table.to_pandas(self_destruct=True, split_blocks=True)
    except CalibrationInputError:
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError) as exc:
        reason = _without_path(str(exc), path, filename)
        raise CalibrationInputError(
            f"the file {filename!r} is not a readable Parquet file ({reason}). Write it "
            "again (e.g. pandas DataFrame.to_parquet) and upload the complete file.",
            code="unreadable_file") from exc
    return ParquetTable(frame, nested)


def _check_parquet_metadata(metadata: pq.FileMetaData, n_flat: int, filename: str,
                            limits: TableLimits) -> None:
    """Refuse from the footer alone a file whose declared size is over a limit."""
    if metadata.num_rows > limits.max_rows:
        raise CalibrationInputError(
            f"the file {filename!r} has {metadata.num_rows:,} rows; at most "
            f"{limits.max_rows:,} are accepted (CALIBDASH_MAX_ROWS).", code="table_too_large")
    check_columns(n_flat, filename, limits)
    declared = sum(metadata.row_group(i).total_byte_size
                   for i in range(metadata.num_row_groups))
    if declared > limits.max_decompressed_bytes:
        raise CalibrationInputError(
            f"the file {filename!r} decodes to {human_size(declared)}; at most "
            f"{human_size(limits.max_decompressed_bytes)} is accepted "
            "(CALIBDASH_MAX_DECOMPRESSED_BYTES).", code="table_too_large")


def _parquet_batches(parquet: pq.ParquetFile, columns: list[str], filename: str,
                     limits: TableLimits, stop: threading.Event | None) -> list[pa.RecordBatch]:
    """Decode in batches, counting decoded bytes (the footer's sizes may lie)."""
    batches = []
    n_bytes = 0
    for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS, columns=columns):
        check_stop(stop, filename)
        n_bytes += batch.nbytes
        if n_bytes > limits.max_decompressed_bytes:
            raise CalibrationInputError(
                f"the file {filename!r} decodes to more than "
                f"{human_size(limits.max_decompressed_bytes)}; the limit is "
                "CALIBDASH_MAX_DECOMPRESSED_BYTES.", code="table_too_large")
        batches.append(batch)
    return batches


def _without_path(message: str, path: Path, filename: str) -> str:
    """pyarrow's message without the temporary file's path."""
    message = re.sub(r"Could not open Parquet input source '[^']*':\s*", "", message)
    message = message.replace(str(path), filename).replace(str(path.parent), "")
    return message.strip().rstrip(".") or "unknown reason"
