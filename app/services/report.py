"""The offline report: every diagnostic of one prediction file, as a JSON-able dict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.services import diagnostics, variables
from app.services.tables import read_table
from calibcore.data import build_prediction_set, infer_roles
from calibcore.views import View


def build_report(path: Path, *, view: View = "top_label", n_bins: int = 15,
                 n_bootstrap: int = 200) -> dict[str, Any]:
    """Infer roles, validate, and compute every global measure (with bootstrap intervals),
    the bin sensitivity of binned ECE, the binned and smooth reliability diagrams, and
    the VECE ranking of the features (paper 003) with permutation p-values."""
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    frame = read_table(path, path.name)
    prediction_set = build_prediction_set(frame, infer_roles(frame).to_roles())
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
        "warnings": list(prediction_set.warnings),
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
