"""Streaming an uploaded file to a temporary path with a size limit."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import UploadFile

from app.api.errors import ApiError

_CHUNK = 1 << 20


@contextmanager
def saved_upload(upload: UploadFile, limit: int, directory: Path) -> Iterator[Path]:
    """Copy ``upload`` to a temporary file (removed afterwards), enforcing ``limit`` bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=directory, prefix=".upload-", delete=False) as target:
        path = Path(target.name)
        try:
            written = 0
            while chunk := upload.file.read(_CHUNK):
                written += len(chunk)
                if written > limit:
                    raise ApiError(413, "too_large",
                                   f"the file {upload.filename!r} is larger than the "
                                   f"{_human(limit)} limit (CALIBDASH_MAX_UPLOAD_BYTES).")
                target.write(chunk)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _human(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:g} {unit}" if unit == "bytes" else f"{size:.3g} {unit}"
        size /= 1024  # type: ignore[assignment]
    return str(size)


