"""Health and version."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

import calibcore
from app.schemas import Health
from app.services.local_embedding import umap_status

router = APIRouter(prefix="/health", tags=["meta"])


@router.get("", response_model=Health)
async def health() -> dict[str, Any]:
    """Up, its version, and whether UMAP is compiled yet (``ready``, ``compiling`` during
    the start-up warm-up, ``not compiled``): a UMAP landscape waits for compiling."""
    return {"status": "ok", "version": calibcore.__version__, "umap": umap_status()}
