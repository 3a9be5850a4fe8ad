"""The offline report: every diagnostic of one prediction file, as a JSON-able dict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.services import diagnostics, variables
from app.services.jsonable import jsonable
from app.services.partitioned_files import dask_client, first_rows, read_partitioned
from app.services.tables import read_table
from calibcore.data import build_prediction_set, infer_roles
from calibcore.exceptions import CalibrationInputError
from calibcore.partitioned import (
    measures_with_intervals,
    partition_classes,
    partitioned_equal_mass,
    partitioned_summaries,
)
from calibcore.views import View


def build_report(path: Path, *, view: View = "top_label", n_bins: int = 15,
                 n_bootstrap: int = 200) -> dict[str, Any]:
    """Infer roles, validate, and compute every global measure (with bootstrap intervals),
    the bin sensitivity of binned ECE, the binned and smooth reliability diagrams, and
    the VECE ranking of the features (paper 003) with permutation p-values."""
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    frame = read_table(path, path.name)
    guess = infer_roles(frame)
    prediction_set = build_prediction_set(frame, guess.to_roles())
    subsets: list[diagnostics.Subset] = ["all"]
    if prediction_set.split is not None:
        subsets.append("test")
    return {
        "file": str(path),
        "n_rows": prediction_set.n_rows,
        "classes": list(prediction_set.classes),
        "roles": {"label": prediction_set.roles.label,
                  "probabilities": list(prediction_set.roles.probabilities),
                  "features": list(prediction_set.roles.features),
                  "split": prediction_set.roles.split, "id": prediction_set.roles.id},
        "warnings": [*guess.notes, *prediction_set.warnings],
        "metrics": diagnostics.global_metrics(prediction_set, view=view, n_bins=n_bins,
                                              n_bootstrap=n_bootstrap),
        "metrics_by_subset": {s: diagnostics.global_metrics(prediction_set, view=view,
                                                            n_bins=n_bins, subset=s,
                                                            n_bootstrap=n_bootstrap)
                              for s in subsets},
        "bin_sensitivity": diagnostics.bin_sensitivity(prediction_set, view=view),
        "reliability": diagnostics.reliability(prediction_set, view=view, n_bins=n_bins,
                                               n_bootstrap=n_bootstrap),
        "variables": variables.ranking_for_report(prediction_set),
    }


def build_partitioned_report(uri: str, *, label: str | None = None,
                             probabilities: Sequence[str] | None = None,
                             scheduler: str | None = None, n_bins: int = 15,
                             n_bootstrap: int = 200) -> dict[str, Any]:
    """The exact binned measures of files of any size on Dask, with their bootstrap
    intervals (issue 14, in progress).

    ``uri`` is a path, glob or fsspec URL of Parquet (``.parquet``/``.pq``) or CSV files.
    Roles not given are inferred from the first rows as for an upload. Runs on the
    scheduler at ``scheduler`` or on a local in-process cluster sized to the machine.
    """
    frame = read_partitioned(uri)
    if label is None or not probabilities:
        roles = infer_roles(first_rows(frame)).to_roles()
        label = label or roles.label
        probabilities = probabilities or roles.probabilities
    if label is None:
        raise CalibrationInputError("no label column found; name it with --label.",
                                    code="roles_not_found")
    with dask_client(scheduler) as client:
        classes = partition_classes(frame, label, probabilities)
        summary, cells = partitioned_summaries(frame, label, probabilities, classes,
                                               n_bins=n_bins)
        equal_mass = partitioned_equal_mass(frame, label, probabilities, classes,
                                            n_bins=n_bins)
        workers = len(client.scheduler_info().get("workers", {}))
    result = measures_with_intervals(summary, cells, n_bootstrap=n_bootstrap)
    measures = {estimate.key: asdict(estimate) for estimate in result.measures}
    return {"file": uri, "engine": "dask", "scheduler": scheduler or "local (in-process)",
            "workers": workers, "n_partitions": frame.npartitions, "n_rows": result.n,
            "n_bins": n_bins, "classes": classes,
            "roles": {"label": label, "probabilities": list(probabilities)},
            "metrics": {"view": "top_label", "n": result.n, "n_bins": n_bins,
                        "n_bootstrap": n_bootstrap, "interval": diagnostics.INTERVAL_NOTE,
                        "resampling": result.resampling,
                        "note": "values exact, merged from per-partition summaries; " + (
                            "intervals resample the merged cells (the in-memory "
                            "bootstrap's draws, whatever the partitioning)"
                            if result.resampling.startswith("resampled")
                            else result.resampling or "no intervals asked for"),
                        "measures": measures,
                        "equal_mass": {
                            **{key: equal_mass[key] for key in ("ece", "mce",
                                                                "classwise_ece")},
                            "edges": equal_mass["edges"][0],
                            "note": "bins at numpy's quantiles of all the scores, found "
                                    "exactly in two passes; no interval"}},
            "reliability": jsonable({
                "view": "top_label", "n": summary.n_rows, "n_bins": n_bins,
                "binning": "equal_width", "diagrams": summary.diagrams(),
                "classwise": summary.diagrams(classwise=True, class_names=classes),
                "note": "exact: per-bin counts and sums merged from the partitions; Wilson "
                        "95% interval of each bin's observed frequency"})}
