"""Conversion of numpy-bearing results into JSON-safe values (NaN/inf -> None)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def jsonable(value: Any) -> Any:
    """Recursively turn arrays, numpy scalars and dataclasses into JSON-safe values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
