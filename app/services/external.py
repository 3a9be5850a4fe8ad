"""Datasets registered by reference: files of any size that stay where they are.

``POST /api/v1/datasets/external`` names Parquet or CSV files by path, glob or fsspec
URL, or the folder that holds them (plain or hive-partitioned). A job reads them on Dask
(the cluster at ``CALIBDASH_DASK_SCHEDULER``, or a local in-process one) and keeps two
things, never the rows themselves:

* the exact report of every row (:func:`app.services.report.partitioned_report`:
  measures with intervals, equal-mass ECE, binned and smooth reliability diagrams and the
  test of calibration), in the top-label view and, for two classes, the positive view
  too, which the Overview shows for its default settings in either view;
* a seeded uniform sample of the rows (``CALIBDASH_EXTERNAL_SAMPLE_ROWS``, 1,000,000 by
  default) stored as an ordinary dataset, on which every other diagnostic runs; every
  page of such a dataset says "computed on a sample of N of M rows".

Which files may be named is the server's choice, not the client's: only paths and URLs
under ``CALIBDASH_EXTERNAL_ROOTS`` (none by default, which turns the route off).
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from app.jobs import Progress
from app.services.cost import CostEstimate, cost_model
from app.services.datasets import EXTERNAL_REPORT, DatasetService, NotAllowed
from app.services.lake_layouts import lake_files
from app.services.partitioned_files import computed_rows, dask_client, read_partitioned
from app.services.report import partitioned_report, partitioned_roles
from app.services.roles import RoleOverrides
from calibcore.exceptions import CalibrationInputError

_WILDCARD = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class ExternalRequest:
    """What a client asks to register: where the files are, their roles and a name."""

    uri: str
    overrides: RoleOverrides
    name: str | None = None


def allowed_uri(uri: str, roots: str) -> str:
    """``uri`` when it lies under one of the comma-separated ``roots``, else NotAllowed.

    Local paths must be absolute, without ``..``; every file a glob matches, or every data
    file under a folder, must resolve (symbolic links followed) inside a root. URLs
    (``scheme://...``) must start with a root that is itself a URL.
    """
    allowed = [root.strip() for root in roots.split(",") if root.strip()]
    if not allowed:
        raise NotAllowed("registering files by reference is turned off on this server: an "
                         "administrator names the folders or buckets clients may read with "
                         "CALIBDASH_EXTERNAL_ROOTS (comma-separated).")
    if ".." in PurePosixPath(uri.split("://", 1)[-1]).parts:
        raise NotAllowed(f"{uri!r} holds '..'; name the files without it.")
    if "://" in uri:
        prefixes = [root.rstrip("/") + "/" for root in allowed if "://" in root]
        if not any(uri.startswith(prefix) for prefix in prefixes):
            raise NotAllowed(f"{uri!r} is not under a URL this server may read "
                             f"({', '.join(prefixes) or 'none: only local folders'}).")
        return uri
    if not os.path.isabs(uri):
        raise NotAllowed(f"{uri!r} is not an absolute path; name the files from the root "
                         "of the server's file system.")
    folders = [os.path.realpath(root) for root in allowed if "://" not in root]
    folder = os.path.isdir(uri)
    if folder:
        _check_inside(uri, folders)  # before listing it: the listing may be shown in errors
        # each file it would read is checked too: a link inside may lead out of the roots
        matches = list(lake_files(uri).files)
    else:
        matches = glob.glob(uri) if _WILDCARD.search(uri) else [uri]
    for match in matches:
        _check_inside(match, folders)
    if not folder and (not matches or not all(os.path.isfile(match) for match in matches)):
        raise CalibrationInputError(f"no files at {uri!r}: name Parquet or CSV files, a "
                                    "glob of them, or a folder of them.", code="no_files")
    return uri


def _check_inside(path: str, folders: list[str]) -> None:
    """NotAllowed unless ``path`` resolves inside one of ``folders``."""
    real = os.path.realpath(path)
    if not any(os.path.commonpath([real, folder]) == folder for folder in folders):
        raise NotAllowed(f"{path!r} is not under a folder this server may read "
                         f"({', '.join(folders) or 'none: only URLs'}).")


def register_external(datasets: DatasetService, request: ExternalRequest, *,
                      scheduler: str | None, sample_rows: int, random_state: int,
                      n_bootstrap: int, progress: Progress) -> dict[str, Any]:
    """Compute the exact report of every row at ``request.uri``, store a seeded uniform
    sample of ``sample_rows`` rows as a dataset, and return its summary."""
    frame = read_partitioned(request.uri)
    roles = partitioned_roles(frame, request.overrides)
    with dask_client(scheduler):
        report = partitioned_report(
            frame, roles, n_bootstrap=n_bootstrap,
            negative_rate=request.overrides.negative_rate,
            progress=lambda done, message: progress.update(0.85 * done, message))
        n_rows = int(report["n_rows"])
        drawing = (f"drawing a seeded sample of {min(sample_rows, n_rows):,} of {n_rows:,} "
                   "rows")
        progress.update(0.85, drawing)
        columns = [str(column) for column in roles.columns()]
        part = frame[columns]
        sample = computed_rows(
            part.sample(frac=sample_rows / n_rows, random_state=random_state)
            if n_rows > sample_rows else part,
            lambda done: progress.update(0.85 + 0.1 * done, drawing))
    sample = sample.reset_index(drop=True)
    progress.update(0.95, "storing the sample")
    external = {"uri": request.uri, "n_rows": n_rows, "n_sample": len(sample),
                "sampled": n_rows > sample_rows, "random_state": random_state,
                "n_partitions": int(report["n_partitions"]),
                "scheduler": scheduler or "local (in-process)"}
    fixed = RoleOverrides(label=roles.label, probabilities=roles.probabilities,
                          features=roles.features, split=roles.split, id=roles.id,
                          no_split=roles.split is None, no_id=roles.id is None,
                          time=roles.time, no_time=roles.time is None, models=roles.models,
                          logits=roles.logits, renormalize=request.overrides.renormalize,
                          weight=roles.weight, no_weight=roles.weight is None,
                          negative_rate=request.overrides.negative_rate)
    name = request.name or "/".join(PurePosixPath(request.uri.split("://", 1)[-1]).parts[-2:])
    return datasets.create_from_frame(sample, fixed, name, request.uri,
                                      extra_meta={"external": external},
                                      documents={EXTERNAL_REPORT: report})


def external_terms(uri: str) -> dict[str, float]:
    """The work of registering ``uri``, counted before starting (see
    :class:`app.services.cost.CostModel`): starting Dask, and the bytes of its Parquet and
    of its CSV files (read once for the exact report, again for the sample). A file
    system that cannot list sizes counts none (the estimate then is Dask's start only)."""
    from fsspec.core import url_to_fs

    terms = {"fixed": 1.0, "parquet_bytes": 0.0, "csv_bytes": 0.0, "columns": 0.0}
    try:
        fs, path = url_to_fs(uri)
        if fs.isdir(path):
            files = list(lake_files(uri).files)
        else:
            files = list(fs.glob(path)) if _WILDCARD.search(str(path)) else [path]
        for name in files:
            kind = "csv_bytes" if str(name).lower().endswith((".csv", ".csv.gz")) else \
                "parquet_bytes"
            terms[kind] += float(fs.size(name) or 0)
        if files:
            terms["columns"] = float(_column_count(fs, str(files[0])))
    except (OSError, ValueError, CalibrationInputError):
        pass
    return terms


def _column_count(fs: Any, name: str) -> int:
    """Columns of one file, from its Parquet footer or its CSV header line: the report
    summarizes every feature column (three passes), a cost the bytes alone miss on a wide
    file with few rows."""
    import pyarrow.parquet as pq

    if name.lower().endswith((".csv", ".csv.gz")):
        with fs.open(name, "rb", compression="infer") as handle:
            header = handle.readline().decode("utf-8", "replace")
        return header.count(",") + 1 if header else 0
    with fs.open(name, "rb") as handle:
        return len(pq.read_schema(handle).names)


def estimate_external(uri: str) -> CostEstimate:
    """Seconds of registering ``uri``, before starting (:func:`external_terms` times the
    fitted model)."""
    terms = external_terms(uri)
    size = (terms["parquet_bytes"] + terms["csv_bytes"]) / 1e6
    return cost_model("external").estimate(
        terms, f"{size:,.1f} MB of files read on Dask, twice (report, then sample), and "
               "a cluster started")


__all__ = ["ExternalRequest", "allowed_uri", "estimate_external", "external_terms",
           "register_external"]
