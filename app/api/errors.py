"""One error shape for the whole API, and the handlers that produce it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.services.datasets import NotAllowed, NotFound
from calibcore.exceptions import CalibrationInputError

logger = logging.getLogger("calibdash")

#: Refusals of a well-formed request that the stored resource cannot answer: the dataset
#: has no second model, no time column, no such feature, too few rows in the chosen subset,
#: a result not computed yet... The same request succeeds on another dataset, so the
#: answer is 409 Conflict (the request conflicts with the resource's current state), not
#: 422, which says the request itself is wrong (a parameter out of its range, a file that
#: cannot be read).
STATE_CODES = frozenset({
    "no_models", "no_time", "no_split", "no_features", "unknown_feature", "unknown_column",
    "unknown_model", "unknown_class", "empty_split", "empty_variable", "too_few_rows",
    "single_class", "not_computed", "column_not_computed", "not_cross_fitted",
    "constant_probability",
})


def input_error_status(code: str) -> int:
    """The HTTP status of a :class:`CalibrationInputError` with ``code``.

    >>> input_error_status("no_time"), input_error_status("invalid_parameters")
    (409, 422)
    """
    return 409 if code in STATE_CODES else 422


class ApiError(Exception):
    """An error with an HTTP status, a code and a message a person can act on."""

    def __init__(self, status: int, code: str, message: str,
                 details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.headers = headers


def error_response(status: int, code: str, message: str,
                   details: dict[str, Any] | None = None,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, headers=headers, content={
        "error": {"code": code, "message": message, "details": details or {}}})


#: What a parameter checked by a pattern must look like, in words (the pattern itself is in
#: the OpenAPI document).
PATTERN_HINTS = {
    "thresholds": "must be 1 to 200 decimals strictly between 0 and 1 separated by commas, "
                  "such as 0.05,0.1,0.2",
}


def _validation_message(exc: RequestValidationError) -> tuple[str, dict[str, Any]]:
    problems = []
    for item in exc.errors():
        where = ".".join(str(part) for part in item.get("loc", ()) if part != "body")
        name = str(item.get("loc", ("",))[-1])
        if item.get("type") == "finite_number":  # NaN/inf: not a range problem
            problems.append(f"{where or 'value'} must be a finite number")
        elif item.get("type") == "string_pattern_mismatch" and name in PATTERN_HINTS:
            problems.append(f"{where}: {PATTERN_HINTS[name]}")
        else:
            problems.append(f"{where or 'request'}: {item.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(problems), {"problems": problems}


def install_error_handlers(app: FastAPI) -> None:
    """Register handlers so every failure leaves as ``{"error": {...}}``."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.details, exc.headers)

    @app.exception_handler(CalibrationInputError)
    async def _input_error(_: Request, exc: CalibrationInputError) -> JSONResponse:
        return error_response(input_error_status(exc.code), exc.code, exc.message,
                              exc.details())

    @app.exception_handler(NotAllowed)
    async def _not_allowed(_: Request, exc: NotAllowed) -> JSONResponse:
        return error_response(403, "not_allowed", str(exc))

    @app.exception_handler(NotFound)
    async def _not_found(_: Request, exc: NotFound) -> JSONResponse:
        return error_response(404, "not_found", str(exc), {"kind": exc.kind, "id": exc.record_id})

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        message, details = _validation_message(exc)
        return error_response(422, "invalid_request", message, details)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            exc.status_code, "http_error")
        # keeps a 405's Allow header (and any other the exception carries)
        return error_response(exc.status_code, code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error",
                              f"an unexpected error occurred ({type(exc).__name__}); the server "
                              "is still running and nothing stored was changed.")
