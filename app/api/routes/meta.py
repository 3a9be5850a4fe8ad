"""Health and version."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

import calibcore

router = APIRouter(tags=["meta"])


@router.get("/health")
async def health() -> dict[str, Any]:
    return {"status": "ok", "version": calibcore.__version__}
