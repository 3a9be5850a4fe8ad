"""Writing tables for download without spreadsheet formula injection (SPEC §7)."""

from __future__ import annotations

import io
from typing import Literal

import pandas as pd

ExportFormat = Literal["csv", "parquet"]
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def escape_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix text cells and column names that a spreadsheet would read as a formula with a
    quote (SPEC §7)."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        text = values.astype("string")
        risky = text.str.startswith(_FORMULA_PREFIXES).fillna(False).astype(bool)
        if risky.any():
            out[column] = values.astype(object).where(~risky, "'" + text[risky].astype(str))
    out.columns = [_escaped(name) for name in out.columns]
    return out


def _escaped(name: object) -> object:
    return "'" + name if isinstance(name, str) and name.startswith(_FORMULA_PREFIXES) else name


def export_bytes(frame: pd.DataFrame, export_format: ExportFormat) -> bytes:
    """Serialize for download: CSV (formula-escaped) or Parquet."""
    if export_format == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    return escape_formulas(frame).to_csv(index=False).encode("utf-8")
