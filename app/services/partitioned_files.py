"""Prediction files of any size read by reference on Dask: the report's and the
recalibration's shared parts, and recalibration at scale.

A recalibrator is fitted in memory on the calibration rows (a seeded uniform sample of
them above ``max_fit_rows``, said in the result), exactly as ``calibdash recalibrate``
fits a file, then applied to every partition where it lies (``map_partitions``) and
written as partitioned Parquet: nothing but the fitted model's document travels.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import pandas as pd

from app.services.lake_layouts import is_directory, read_lake
from app.services.methods import MethodSpec
from app.services.recalibration import recalibrate_table
from app.services.saved_models import LoadedModel, apply_model, load_model
from calibcore.partitioned import compute_reporting

if TYPE_CHECKING:
    import dask.dataframe as dd
    from dask.distributed import Client

#: Rows the recalibrator is fitted on at most (a seeded uniform sample above).
MAX_FIT_ROWS = 1_000_000
#: Rows of the first partition that role inference reads.
ROLE_ROWS = 10_000


def read_partitioned(uri: str) -> dd.DataFrame:
    """Parquet (``.parquet``/``.pq``) or CSV files at a path, glob or fsspec URL, or every
    such file under a folder (plain or hive-partitioned, as Spark, Hive and Dask write
    them; see :mod:`app.services.lake_layouts`).

    Categorical columns (hive partition values, as dask reads them) come back as their
    plain values, as an uploaded file has them: role inference and the summaries test a
    column's type (numbers, dates, text), and a categorical of numbers or dates is none.
    """
    import dask.dataframe as dd

    if is_directory(uri):
        frame = read_lake(uri)
    elif uri.rstrip("/").lower().endswith((".parquet", ".pq")):
        frame = dd.read_parquet(uri)
    else:
        frame = dd.read_csv(uri)
    return _plain_categoricals(frame)


def _plain_categoricals(frame: dd.DataFrame) -> dd.DataFrame:
    """``frame`` with each categorical column of known categories cast to their type."""
    plain = {str(column): dtype.categories.dtype for column, dtype in frame.dtypes.items()
             if isinstance(dtype, pd.CategoricalDtype) and frame[column].cat.known}
    return frame.astype(plain) if plain else frame


def first_rows(frame: dd.DataFrame) -> pd.DataFrame:
    """The first rows of the first partition (one file's worth is read, not all)."""
    return frame.get_partition(0).compute().head(ROLE_ROWS)


def computed_rows(frame: dd.DataFrame,
                  progress: Callable[[float], None] | None = None) -> pd.DataFrame:
    """``frame.compute()``, with ``progress(fraction)`` as each partition arrives (it may
    raise to stop; the partitions not yet computed are cancelled)."""
    import dask

    parts = frame.to_delayed()
    finalize, extra = frame.__dask_postcompute__()  # how compute() joins the partitions
    (rows,) = compute_reporting([dask.delayed(finalize)(parts, *extra)], parts, progress)
    return rows


@contextmanager
def dask_client(scheduler: str | None) -> Iterator[Client]:
    """A client of the cluster at ``scheduler``, or of a local in-process cluster sized to
    the machine. The local scheduler's HTTP server takes a free port: on the fixed 8787
    (used even with the dashboard off) a second cluster on the machine would warn, and
    under -W error fail to start."""
    from dask.distributed import Client

    with (Client(scheduler) if scheduler else
          Client(processes=False, dashboard_address=":0")) as client:
        yield client


@dataclass(frozen=True)
class PartitionedRecalibration:
    """What :func:`recalibrate_partitioned` did.

    Attributes
    ----------
    out : str
        The directory of the corrected Parquet files.
    document : dict
        The fitted model's portable document.
    n_rows, n_partitions : int
        Rows and partitions corrected.
    n_fitted : int
        Rows the model was fitted on; ``sampled`` says whether they were a sample.
    note : str
        How the fit rows were chosen, in words.
    test_before, test_after : dict or None
        Measures on the sample's held-out test rows (with a split column).
    """

    out: str
    document: dict[str, Any]
    n_rows: int
    n_partitions: int
    n_fitted: int
    sampled: bool
    note: str
    test_before: dict[str, float] | None
    test_after: dict[str, float] | None


def recalibrate_partitioned(uri: str, spec: MethodSpec, *, out: str | None = None,
                            scheduler: str | None = None, max_fit_rows: int = MAX_FIT_ROWS,
                            random_state: int = 0) -> PartitionedRecalibration:
    """Fit ``spec`` on (a sample of) the rows at ``uri`` and write every row corrected.

    Roles are inferred as for an upload (on the fit rows). The corrected table is the
    input with one ``calibrated_proba_<class>`` column per class appended, written
    under ``out`` (default: ``calibrated-<method>`` beside the input).
    """
    frame = read_partitioned(uri)
    with dask_client(scheduler):
        n_rows = int(frame.shape[0].compute())
        sampled = n_rows > max_fit_rows
        fit_rows = (frame.sample(frac=max_fit_rows / n_rows, random_state=random_state)
                    if sampled else frame).compute()
        fitted = recalibrate_table(fit_rows, spec)
        model = load_model(fitted.document)
        meta = apply_model(model, fit_rows.head(2)).iloc[:0]
        target = out or default_out(uri, spec.method)
        frame.map_partitions(_corrected, model, meta=meta).to_parquet(target,
                                                                       write_index=False)
    read = (f"a seeded uniform sample of {len(fit_rows):,} of the {n_rows:,} rows "
            f"(random_state={random_state}; above max_fit_rows={max_fit_rows:,})" if sampled
            else f"all {n_rows:,} rows")
    which = ("its calibration rows" if fitted.test_before is not None else "every row")
    note = f"fitted on {which} ({fitted.n_fitted:,}) of {read}"
    return PartitionedRecalibration(target, fitted.document, n_rows, frame.npartitions,
                                    fitted.n_fitted, sampled, note, fitted.test_before,
                                    fitted.test_after)


def default_out(uri: str, method: str) -> str:
    """``calibrated-<method>`` in the deepest directory of ``uri`` without wildcards."""
    parts = PurePosixPath(uri).parts
    fixed = list(parts[:-1])
    for index, part in enumerate(parts[:-1]):
        if re.search(r"[*?\[]", part):
            fixed = list(parts[:index])
            break
    base = PurePosixPath(*fixed) if fixed else PurePosixPath(".")
    return str(base / f"calibrated-{method}")


def _corrected(part: pd.DataFrame, model: LoadedModel) -> pd.DataFrame:
    return apply_model(model, part)


__all__ = ["MAX_FIT_ROWS", "PartitionedRecalibration", "computed_rows", "dask_client",
           "default_out", "first_rows", "read_partitioned", "recalibrate_partitioned"]
