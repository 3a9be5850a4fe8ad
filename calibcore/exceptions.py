"""Exceptions raised by calibcore.

Every error caused by the caller's input is a :class:`CalibrationInputError`,
a ``ValueError`` subclass, so callers can catch bad input without catching
programming errors.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CalibrationInputError", "NotFittedError", "RoleInferenceError"]


class CalibrationInputError(ValueError):
    """Input data or parameters that calibcore cannot use.

    Parameters
    ----------
    message : str
        A sentence a person can act on: what is wrong, where, and how to fix it.
    code : str, default="invalid_input"
        A short machine-readable reason, used by the REST API.
    column : str or None
        The column at fault, when there is one.
    rows : sequence of int, optional
        The first offending rows (0-based positions).
    count : int or None
        How many rows are at fault in total.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "invalid_input",
        column: str | None = None,
        rows: Sequence[int] = (),
        count: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.column = column
        self.rows = [int(r) for r in rows]
        self.count = count

    #: Every problem found when several were (:meth:`of_all`), this one included.
    collected: tuple[CalibrationInputError, ...] = ()

    def details(self) -> dict[str, object]:
        """Structured details for an API error body."""
        out: dict[str, object] = {}
        if self.column is not None:
            out["column"] = self.column
        if self.rows:
            out["rows"] = self.rows
        if self.count is not None:
            out["count"] = self.count
        if self.collected:
            out["problems"] = [{"code": problem.code, "message": problem.message,
                                **problem.details()} for problem in self.collected]
        return out

    @classmethod
    def of_all(cls, problems: Sequence[CalibrationInputError]) -> CalibrationInputError:
        """One error saying every problem (numbered, each with its rows and count); the
        first's code, column and rows lead, and ``collected`` lists them all."""
        first = problems[0]
        if len(problems) == 1:
            return first
        listed = " ".join(f"({number}) {problem.message}"
                          for number, problem in enumerate(problems, start=1))
        error = cls(f"{len(problems)} problems in the table: {listed}", code=first.code,
                    column=first.column, rows=first.rows, count=first.count)
        error.collected = tuple(problems)
        return error


class RoleInferenceError(CalibrationInputError):
    """The columns of a prediction table could not be given roles."""


class NotFittedError(CalibrationInputError):
    """A recalibrator was used before ``fit``."""
