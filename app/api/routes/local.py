"""Local routes (being built)."""

from __future__ import annotations

from fastapi import APIRouter

from app.schemas.models import ErrorResponse

router = APIRouter(tags=["local"], responses={404: {"model": ErrorResponse},
                                               422: {"model": ErrorResponse}})
