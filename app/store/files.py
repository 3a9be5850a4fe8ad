"""Crash-safe files of the store: temporary names, locks, flushes and atomic renames.

A file of the store is written under a temporary name beside its final one
(``.<final name>.<random>.tmp``, :func:`staged_file`), locked with ``flock`` for as long
as its write runs (the lock dies with the process), flushed to disk and renamed into
place (``os.replace`` is atomic on POSIX). A sweep at start (:class:`app.store.Store`)
removes temporary files whose lock it can take, so a write still running in another
process is never touched; tables and documents are named after the id of the record
they belong to (:func:`owner`).
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Staged", "atomic_write", "flush_file", "flush_folder", "is_temporary", "owner",
           "staged_file", "try_lock"]

#: Ids made by :func:`new_id`: a lower-case prefix and 22 URL-safe characters. A file
#: belongs to the record whose id starts its name, followed by "." or "-".
_OWNER = re.compile(r"([a-z]+_[A-Za-z0-9_-]{22})(?:[.-]|$)")

def is_temporary(path: Path) -> bool:
    """A file named as :func:`staged_file` names its temporary files."""
    return path.name.startswith(".") and path.name.endswith(".tmp")


def owner(path: Path) -> str | None:
    """The id of the record a table or document belongs to, or None (not named by an id)."""
    match = _OWNER.match(path.name)
    return match.group(1) if match else None



@dataclass
class Staged:
    """A temporary file being written (``path``) and whether to keep it on leaving;
    ``linked`` when it is a hard link to an existing file (its content is there)."""

    path: Path
    keep: bool = False
    linked: bool = False


@contextmanager
def staged_file(path: Path, source: Path | None = None) -> Iterator[Staged]:
    """A locked, empty temporary file beside ``path``, removed on leaving unless it was
    renamed or ``keep`` was set (its record is committed: the journal renames it).

    With ``source``, the temporary file is a hard link to ``source`` (``linked``): its
    content without a copy, already on disk when ``source`` was flushed. Where the file
    system has no hard links it is an empty file as without ``source``.

    The lock (``flock``, released when the process dies) tells a sweep of another
    process that the file is being written. A sweep may remove a file between its
    creation and its locking: then another is made.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        handle, name, linked = _temporary(path, source)
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if os.stat(name).st_ino == os.fstat(handle).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(handle)
    staged = Staged(Path(name), linked=linked)
    try:
        yield staged
    finally:
        if not staged.keep:
            staged.path.unlink(missing_ok=True)  # nothing to do once renamed
        os.close(handle)


def _temporary(path: Path, source: Path | None) -> tuple[int, str, bool]:
    """An open descriptor and the name of a new temporary file beside ``path`` (a hard
    link to ``source`` when given and the file system allows it), and whether it is."""
    if source is not None:
        while True:
            name = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
            try:
                os.link(source, name)
            except FileExistsError:
                continue
            except FileNotFoundError:
                raise
            except OSError:  # no hard links here (or across these folders)
                break
            try:
                return os.open(name, os.O_RDONLY), name, True
            except FileNotFoundError:  # swept before it was opened
                continue
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    return handle, name, False


def flush_file(path: Path) -> None:
    with open(path, "rb") as stream:
        os.fsync(stream.fileno())


def flush_folder(folder: Path) -> None:
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it into place."""
    with staged_file(path) as staged:
        write(staged.path)
        flush_file(staged.path)
        os.replace(staged.path, path)



def try_lock(path: Path) -> int | None:
    """An open, exclusively locked descriptor of ``path``; None if it is gone or locked."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(handle)
        return None
    return handle
