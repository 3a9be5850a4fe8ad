"""The server itself: health and version."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    """The server is up; its version, and whether UMAP is compiled yet."""

    status: Literal["ok"]
    version: str
    umap: Literal["ready", "compiling", "not compiled"] = Field(
        description="compiling during the start-up warm-up; a UMAP landscape waits for it")
