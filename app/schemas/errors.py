"""The one error shape of the API: ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    """What went wrong, for a program (``code``) and for a person (``message``)."""

    code: str = Field(description="machine-readable reason, e.g. 'probability_out_of_range'")
    message: str = Field(description="what is wrong and how to fix it")
    details: dict[str, Any] = Field(default_factory=dict,
                                    description="column, first offending rows, count, ...")


class ErrorResponse(BaseModel):
    """Every 4xx and 5xx answer of the API."""

    error: ErrorBody
