"""Embedded persistence: metadata in SQLite, tables in Parquet, crash-safe writes.

A new record and its files are stored by :meth:`Store.commit` in three steps:

1. each file is written under a temporary name beside its final one
   (``.<final name>.<random>.tmp``), flushed to disk, and locked (``flock``) for as
   long as the write runs;
2. one SQLite transaction inserts the record together with a journal row per file
   (``renames``: temporary name -> final name);
3. the files are renamed into place (``os.replace`` is atomic on POSIX) and the
   journal rows deleted.

A crash before 2 leaves only temporary files; a crash after it leaves a committed
record whose renames the journal finishes at the next start. So a final name exists
only for a committed record, and a record never lacks its files. Files written for
a record that already exists (cached results) are written to a temporary name and
renamed the same way, without a journal: losing one only means computing it again.

Opening the store finishes journalled renames and removes what a crash can leave:
temporary files, and tables or documents named after an id that has no record (a
record deleted before its files). A temporary file whose lock is held belongs to a
write still running (in this or another process) and is never touched. The temporary
files, their locks, flushes and renames are :mod:`app.store.files`.

For crash tests only: when the environment variable ``CALIBDASH_TEST_KILL_AT`` is
``<kind>:<step>`` (steps ``written``, ``committed``, ``renamed``; e.g.
``dataset:committed``), :meth:`Store.commit` of a record of that kind kills its own
process with SIGKILL at that step. Unset, as in any real deployment, it does nothing.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from app.store.files import (
    Staged,
    atomic_write,
    flush_file,
    flush_folder,
    is_temporary,
    owner,
    staged_file,
    try_lock,
)

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
CREATE TABLE IF NOT EXISTS renames (
    tmp TEXT PRIMARY KEY,
    final TEXT NOT NULL
);
"""
#: Environment variable of the crash tests' kill points (see the module docstring).
KILL_AT = "CALIBDASH_TEST_KILL_AT"

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


def _kill_point(kind: str, step: str) -> None:
    """Crash tests only: SIGKILL this process at ``<kind>:<step>`` (module docstring)."""
    if os.environ.get(KILL_AT) == f"{kind}:{step}":
        logger.warning("%s=%s: killing the server", KILL_AT, os.environ[KILL_AT])
        os.kill(os.getpid(), signal.SIGKILL)


class Store:
    """Datasets, uploads, recalibrations and cached results under one directory.

    Parameters
    ----------
    root : Path
        The data directory; created if missing. Opening it finishes the renames of
        committed records and removes what interrupted writes left
        (``removed_leftovers``).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "tables").mkdir(exist_ok=True)
        (self.root / "documents").mkdir(exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as connection:
            connection.executescript(_SCHEMA)
        self.finished_renames = self._finish_renames()
        self.removed_leftovers = self._remove_leftovers()

    def _finish_renames(self) -> list[Path]:
        """Rename into place the files of records committed before a crash."""
        with self._connect() as connection:
            rows = connection.execute("SELECT tmp, final FROM renames").fetchall()
        finished = []
        for tmp_name, final_name in rows:
            tmp, final = self.root / tmp_name, self.root / final_name
            handle = try_lock(tmp)
            if handle is None and tmp.exists():
                continue  # its write is still running (another process): it renames it
            try:
                if handle is not None:
                    os.replace(tmp, final)
                    flush_folder(final.parent)
                    finished.append(final)
                    logger.warning("finished the interrupted write of %s",
                                   final.relative_to(self.root))
                with self._lock, self._connect() as connection:
                    connection.execute("DELETE FROM renames WHERE tmp = ?", (tmp_name,))
            finally:
                if handle is not None:
                    os.close(handle)
        return finished

    def _remove_leftovers(self) -> list[Path]:
        """Remove temporary files and orphans left by a crash; log and return them.

        A table or document belongs to the record whose id starts its name
        (``<id>.parquet``, ``<id>-<key>.json``, ``<id>.<what>.<hash>.json``); one whose
        record does not exist is an orphan. Names that do not start with an id are left
        alone, and so are temporary files whose write is still running (locked).
        """
        # Files are listed before the ids are read: a final name appears only after its
        # record is committed, so a file listed here has its owner among the ids below.
        files = [path for folder in ("tables", "documents")
                 for path in (self.root / folder).iterdir() if path.is_file()]
        with self._connect() as connection:
            ids = {row[0] for row in connection.execute("SELECT id FROM records")}
            journalled = {row[0] for row in connection.execute("SELECT tmp FROM renames")}
        removed = []
        for path in files:
            handle = None
            if is_temporary(path):
                if str(path.relative_to(self.root)) in journalled:
                    continue
                handle = try_lock(path)
                if handle is None:
                    continue  # gone, or being written right now
            elif owner(path) is None or owner(path) in ids:
                continue
            try:
                size = path.stat().st_size
                path.unlink()
            except FileNotFoundError:
                continue
            finally:
                if handle is not None:
                    os.close(handle)
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
        """Write a table of a record that exists already (a cached result)."""
        atomic_write(self.table_path(key), partial(_write_frame, frame))

    def read_table(self, key: str) -> pd.DataFrame:
        return pd.read_parquet(self.table_path(key))

    @contextmanager
    def table_ahead(self, key: str, frame: pd.DataFrame) -> Iterator[Callable[[], Staged]]:
        """Write ``frame`` as the table ``key`` on a thread of its own while the caller
        goes on (checking the rows of a new dataset): the context gives a function that
        waits for the write and returns the written temporary file, flushed and locked
        (the lock held by the thread until the context ends), to commit as
        ``written_tables``. Leaving the context waits for the write and removes the
        temporary file unless a commit renamed it or kept it."""
        written: Future[Staged] = Future()
        done = threading.Event()

        def write() -> None:
            try:
                with staged_file(self.table_path(key)) as staged:
                    _write_frame(frame, staged.path)
                    flush_file(staged.path)
                    written.set_result(staged)
                    done.wait()
            except BaseException as error:  # handed to the caller, if it still asks
                if not written.done():
                    written.set_exception(error)

        thread = threading.Thread(target=write, name="table-ahead", daemon=True)
        thread.start()
        try:
            yield written.result
        finally:
            done.set()
            thread.join()

    @contextmanager
    def shared_table(self, key: str, source: Path) -> Iterator[Staged]:
        """The stored table file ``source`` (a staged upload's) as the temporary file of
        the table ``key``, to commit as ``written_tables``: a hard link to it (its content
        was flushed when it was stored), or a flushed copy where hard links are missing.
        Leaving the context removes the temporary file unless a commit renamed it or
        kept it; a ``source`` that is gone raises FileNotFoundError."""
        with staged_file(self.table_path(key), source) as staged:
            if not staged.linked:
                shutil.copyfile(source, staged.path)
                flush_file(staged.path)
            yield staged

    def write_document(self, key: str, document: Any) -> None:
        """Write a document of a record that exists already (a cached result)."""
        atomic_write(self.document_path(key), partial(_write_text, _document_text(document)))

    def read_document(self, key: str) -> Any:
        return json.loads(self.document_path(key).read_text())

    def has_document(self, key: str) -> bool:
        return self.document_path(key).exists()

    # -- metadata ---------------------------------------------------------------
    def commit(self, record: Record, *, tables: Mapping[str, pd.DataFrame] | None = None,
               documents: Mapping[str, Any] | None = None,
               written_tables: Mapping[str, Staged] | None = None) -> None:
        """Store a new record with its tables and documents, all or nothing.

        The files are written under temporary names, the record and a journal of the
        renames are committed in one transaction, then the files are renamed into place
        (the module docstring says why a crash at any point loses nothing and leaves
        nothing behind). Every key must start with the record's id. ``written_tables``
        are tables already under their temporary names, flushed and locked: written
        beside other work (:meth:`table_ahead`) or the content of a stored table
        (:meth:`shared_table`).
        """
        targets: list[tuple[Path, Callable[[Path], None]]] = [
            (self.table_path(key), partial(_write_frame, frame))
            for key, frame in (tables or {}).items()]
        targets += [(self.document_path(key), partial(_write_text, _document_text(document)))
                    for key, document in (documents or {}).items()]
        written = [(file, self.table_path(key)) for key, file in (written_tables or {}).items()]
        for path in [path for path, _ in targets] + [path for _, path in written]:
            if owner(path) != record.id:
                raise ValueError(f"{path.name} is not named after record {record.id}")
        with ExitStack() as stack:
            staged = list(written)
            for path, write in targets:
                file = stack.enter_context(staged_file(path))
                write(file.path)
                flush_file(file.path)
                staged.append((file, path))
            journal = [(str(file.path.relative_to(self.root)), str(path.relative_to(self.root)))
                       for file, path in staged]
            _kill_point(record.kind, "written")
            with self._lock, self._connect() as connection:
                _insert(connection, record)
                connection.executemany("INSERT INTO renames (tmp, final) VALUES (?, ?)",
                                       journal)
            for file, _ in staged:  # from here on the record needs them, whatever happens
                file.keep = True
            _kill_point(record.kind, "committed")
            for file, path in staged:
                os.replace(file.path, path)
            for folder in {path.parent for _, path in staged}:
                flush_folder(folder)
            _kill_point(record.kind, "renamed")
            if journal:
                with self._lock, self._connect() as connection:
                    connection.executemany("DELETE FROM renames WHERE tmp = ?",
                                           [(tmp,) for tmp, _ in journal])

    def put(self, record: Record) -> None:
        """Insert or replace a record that has no files of its own to write with it."""
        with self._lock, self._connect() as connection:
            _insert(connection, record)

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


def _insert(connection: sqlite3.Connection, record: Record) -> None:
    connection.execute(
        "INSERT OR REPLACE INTO records (kind, id, parent, name, created, meta) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (record.kind, record.id, record.parent, record.name, record.created,
         json.dumps(record.meta, allow_nan=False)))


def _write_table(path: Path, frame: pd.DataFrame) -> None:
    # dictionary-encode all but float columns: a float column's values are nearly all
    # distinct, and trying a dictionary on each of 1,000 probability columns tripled
    # the write (and the file came out larger)
    floats = {str(name) for name, dtype in frame.dtypes.items()
              if isinstance(dtype, np.dtype) and dtype.kind == "f"}
    encoded = [str(name) for name in frame.columns if str(name) not in floats]
    # nor compressed: snappy shrinks float columns by a few percent (1.5M rows of
    # probabilities and features: 80.3 -> 76.8 MiB) at 40% more time to write (0.15 ->
    # 0.21 s) and about four times the time to read back; other columns keep snappy
    frame.to_parquet(path, index=False, use_dictionary=encoded,
                     compression={str(name): "none" if str(name) in floats else "snappy"
                                  for name in frame.columns})


def _write_frame(frame: pd.DataFrame, path: Path) -> None:
    _write_table(path, frame)


def _write_text(text: str, path: Path) -> None:
    path.write_text(text)



def _document_text(document: Any) -> str:
    return json.dumps(document, allow_nan=False)
