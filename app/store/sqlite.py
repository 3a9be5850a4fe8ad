"""Embedded persistence: metadata in SQLite, tables in Parquet, atomic writes.

Every file is written to a temporary name in the same directory and then
renamed over its final name (``os.replace`` is atomic on POSIX), and metadata
rows are inserted only after their files exist, so a crash mid-write leaves
either the old state or the new one, never a half-written dataset. What a crash
can leave is garbage: temporary files, and tables or documents whose record was
never inserted (or was deleted before its files). Opening the store removes both.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    parent TEXT,
    name TEXT NOT NULL,
    created TEXT NOT NULL,
    meta TEXT NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX IF NOT EXISTS records_parent ON records (kind, parent);
"""
#: Ids made by :func:`new_id`: a lower-case prefix and 22 URL-safe characters.
_ID = re.compile(r"[a-z]+_[A-Za-z0-9_-]{22}")

logger = logging.getLogger("calibdash")


@dataclass(frozen=True)
class Record:
    """A stored item's metadata: ``kind`` is "dataset", "upload", "recalibration", ..."""

    kind: str
    id: str
    parent: str | None
    name: str
    created: str
    meta: dict[str, Any]


def new_id(prefix: str) -> str:
    """An unguessable id (128 random bits), prefixed for readability."""
    return f"{prefix}_{secrets.token_urlsafe(16)}"


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb") as stream:
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class Store:
    """Datasets, uploads, recalibrations and cached results under one directory.

    Parameters
    ----------
    root : Path
        The data directory; created if missing.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "tables").mkdir(exist_ok=True)
        (self.root / "documents").mkdir(exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as connection:
            connection.executescript(_SCHEMA)
        self.removed_leftovers = self._remove_leftovers()

    def _remove_leftovers(self) -> list[Path]:
        """Remove temporary files and orphans left by a crash; log and return them.

        A table or document belongs to the record whose id starts its name
        (``<id>.parquet``, ``<id>.<what>.<hash>.json``); one whose record does not exist
        is an orphan. Names that do not start with an id are left alone.
        """
        with self._connect() as connection:
            ids = {row[0] for row in connection.execute("SELECT id FROM records")}
        leftovers = []
        for folder in ("tables", "documents"):
            for path in (self.root / folder).iterdir():
                owner = path.name.split(".", 1)[0]
                temporary = path.name.startswith(".") and path.name.endswith(".tmp")
                if path.is_file() and (temporary or (_ID.fullmatch(owner) and owner not in ids)):
                    leftovers.append(path)
        removed = []
        for path in leftovers:
            try:
                size = path.stat().st_size
                path.unlink()
            except FileNotFoundError:
                continue
            removed.append(path)
            logger.warning("removed a leftover of an interrupted write: %s (%s bytes)",
                           path.relative_to(self.root), f"{size:,}")
        return removed

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        connection = sqlite3.connect(self.root / "calibdash.sqlite3", timeout=30)
        try:
            with connection:
                yield connection
        finally:
            connection.close()

    # -- tables and documents -------------------------------------------------
    def table_path(self, key: str) -> Path:
        return self.root / "tables" / f"{key}.parquet"

    def document_path(self, key: str) -> Path:
        return self.root / "documents" / f"{key}.json"

    def write_table(self, key: str, frame: pd.DataFrame) -> None:
        # dictionary-encode all but float columns: a float column's values are nearly all
        # distinct, and trying a dictionary on each of 1,000 probability columns tripled
        # the write (and the file came out larger)
        encoded = [str(name) for name, dtype in frame.dtypes.items()
                   if not (isinstance(dtype, np.dtype) and dtype.kind == "f")]
        atomic_write(self.table_path(key), lambda tmp: frame.to_parquet(
            tmp, index=False, use_dictionary=encoded))

    def read_table(self, key: str) -> pd.DataFrame:
        return pd.read_parquet(self.table_path(key))

    def write_document(self, key: str, document: Any) -> None:
        text = json.dumps(document, allow_nan=False)

        def write(tmp: Path) -> None:
            tmp.write_text(text)

        atomic_write(self.document_path(key), write)

    def read_document(self, key: str) -> Any:
        return json.loads(self.document_path(key).read_text())

    def has_document(self, key: str) -> bool:
        return self.document_path(key).exists()

    # -- metadata ---------------------------------------------------------------
    def put(self, record: Record) -> None:
        with self._lock, self._connect() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO records (kind, id, parent, name, created, meta) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (record.kind, record.id, record.parent, record.name, record.created,
                 json.dumps(record.meta, allow_nan=False)),
            )

    def get(self, kind: str, record_id: str) -> Record | None:
        with self._connect() as connection:
            row = connection.execute(
                "SELECT kind, id, parent, name, created, meta FROM records "
                "WHERE kind = ? AND id = ?", (kind, record_id)).fetchone()
        return None if row is None else _record(row)

    def find(self, kind: str, parent: str | None = None) -> list[Record]:
        query = "SELECT kind, id, parent, name, created, meta FROM records WHERE kind = ?"
        args: tuple[Any, ...] = (kind,)
        if parent is not None:
            query += " AND parent = ?"
            args += (parent,)
        with self._connect() as connection:
            rows = connection.execute(query + " ORDER BY created, id", args).fetchall()
        return [_record(row) for row in rows]

    def delete(self, kind: str, record_id: str) -> list[Record]:
        """Delete a record and its children (recursively); returns what was removed."""
        removed: list[Record] = []
        record = self.get(kind, record_id)
        if record is None:
            return removed
        with self._connect() as connection:
            children = connection.execute(
                "SELECT kind, id, parent, name, created, meta FROM records WHERE parent = ?",
                (record_id,)).fetchall()
        for child in children:
            removed += self.delete(child[0], child[1])
        with self._lock, self._connect() as connection:
            connection.execute("DELETE FROM records WHERE kind = ? AND id = ?", (kind, record_id))
        for path in list(self.root.glob(f"tables/{record_id}*")) + list(
                self.root.glob(f"documents/{record_id}*")):
            path.unlink(missing_ok=True)
        return [record, *removed]


def now() -> str:
    """UTC timestamp, ISO 8601 with microseconds (sortable)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _record(row: tuple[Any, ...]) -> Record:
    return Record(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]))
