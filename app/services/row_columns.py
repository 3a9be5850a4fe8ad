"""Per-row result columns (LCE, HH, support, ...) kept beside a dataset for exports.

A diagnostic that computes one value per row saves it here; downloads can then
add it as a column. Tables are keyed ``<dataset_id>.column.<name>`` so deleting
the dataset removes them too.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from app.store import Store
from calibcore.exceptions import CalibrationInputError

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


def _key(dataset_id: str, name: str) -> str:
    if not _NAME.match(name):
        raise CalibrationInputError(f"invalid column name {name!r}: use lower-case letters, "
                                    "digits and underscores.", code="invalid_parameters")
    return f"{dataset_id}.column.{name}"


def save_row_column(store: Store, dataset_id: str, name: str, values: ArrayLike) -> None:
    """Keep ``values`` (one per dataset row, NaN where undefined) as column ``name``."""
    store.write_table(_key(dataset_id, name),
                      pd.DataFrame({name: np.asarray(values, dtype=np.float64)}))


def available_row_columns(store: Store, dataset_id: str) -> list[str]:
    """Names of the per-row columns saved for a dataset."""
    prefix = f"{dataset_id}.column."
    return sorted(path.name[len(prefix):-len(".parquet")]
                  for path in store.table_path("x").parent.glob(f"{prefix}*.parquet"))


def load_row_columns(store: Store, dataset_id: str, names: list[str]) -> pd.DataFrame:
    """The requested per-row columns side by side; unknown names are an input error."""
    missing = [n for n in names if n not in available_row_columns(store, dataset_id)]
    if missing:
        raise CalibrationInputError(
            f"no saved {', '.join(missing)} column for this dataset; compute it first on its "
            "page (or through the API).", code="column_not_computed")
    frames = [store.read_table(_key(dataset_id, name)) for name in names]
    return pd.concat(frames, axis=1) if frames else pd.DataFrame()
