"""Parameter types shared by several request models.

Request bodies are validated strictly (``strict=True``): a body the schema forbids, such
as ``0`` for ``false`` or ``"5"`` for ``5``, is a 422 rather than coerced.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field


def _whole_number(value: Any) -> Any:
    # JSON Schema counts 5.0 as an integer; a strict int would refuse it
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: Lets a strict int take 5.0, as JSON Schema counts it an integer (never "5" or true).
#: Put it after any constraint (``Annotated[int, Field(ge=1), WHOLE_NUMBER]``), so that the
#: schema states the constraint as ``minimum``.
WHOLE_NUMBER = BeforeValidator(_whole_number)
#: An integer as JSON Schema has it in a strict request body.
JsonInt = Annotated[int, WHOLE_NUMBER]

#: Most rows a sample-size parameter may ask for (more than any accepted table holds by
#: default, CALIBDASH_MAX_ROWS); larger values would only mean "every row".
MAX_ROW_COUNT = 20_000_000
#: A number of rows to sample, evaluate or return.
RowCount = Annotated[int, Field(ge=1, le=MAX_ROW_COUNT), WHOLE_NUMBER]
#: A seed of every random choice of a computation.
Seed = Annotated[int, Field(ge=0, le=2**32 - 1, description="seeds every random choice"),
                 WHOLE_NUMBER]
