"""File downloads: tables streamed in chunks under a name that is safe in a header."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Annotated, Any, Literal
from urllib.parse import quote

import pandas as pd
from fastapi import Query
from fastapi.responses import StreamingResponse

from app.services.tables import export_chunks, file_stem, release_memory

MEDIA_TYPES = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
FormatQuery = Annotated[Literal["csv", "parquet"], Query(description="csv or parquet")]
#: The OpenAPI description of a download: a file in the asked format, as an attachment.
FILE_RESPONSES: dict[int | str, dict[str, Any]] = {200: {
    "description": "The file, as an attachment (`Content-Disposition` names it).",
    "content": {media_type: {"schema": {"type": "string", "format": "binary"}}
                for media_type in MEDIA_TYPES.values()}}}
_NOT_TOKEN = re.compile(r"[^A-Za-z0-9._-]+")


def content_disposition(filename: str) -> str:
    """``attachment; filename="..."``, plus RFC 5987's ``filename*`` when the name is not
    plain ASCII (browsers save the UTF-8 name; the quoted one is its ASCII fallback).

    The quoted name is reduced to letters, digits, ``.``, ``_`` and ``-`` whatever it was
    given, so no quote, backslash or line break can reach the header.
    """
    decomposed = unicodedata.normalize("NFKD", filename)
    plain = decomposed.encode("ascii", "ignore").decode()
    fallback = _NOT_TOKEN.sub("_", plain).strip("._-") or "download"
    if fallback == filename:
        return f'attachment; filename="{filename}"'
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


def file_response(frame: pd.DataFrame, export_format: Literal["csv", "parquet"],
                  filename: str) -> StreamingResponse:
    """A download streamed in chunks, with the format's media type and a file name.

    The table is dropped and freed memory handed back to the system once it is sent.
    """
    holder = [frame]
    del frame

    def body() -> Iterator[bytes]:
        try:
            yield from export_chunks(holder[0], export_format)
        finally:
            holder.clear()
            release_memory()

    return StreamingResponse(body(), media_type=MEDIA_TYPES[export_format],
                             headers={"Content-Disposition": content_disposition(filename)})


def corrected_name(filename: str | None, export_format: str) -> str:
    """``<stem>-calibrated.<format>`` from an uploaded file's name."""
    name = (filename or "upload").replace("\\", "/").rsplit("/", 1)[-1]
    return f"{file_stem(name, fallback='upload')}-calibrated.{export_format}"
