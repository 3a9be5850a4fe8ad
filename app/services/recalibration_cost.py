"""What fitting and comparing recalibration methods costs, counted before they start.

The Recalibrate page shows the estimate before a user presses fit, and every job
carries it: :func:`recalibration_terms` counts the work as the terms of the
``recalibration`` cost model (:class:`app.services.cost.CostModel`, fitted by
``python -m benchmarks.fit_costs``), and :func:`recalibration_seconds` prices them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.services.cost import cost_model
from app.services.heterogeneity import HeterogeneityParams, heterogeneity_terms
from app.services.methods import MethodSpec, composition_step
from app.services.recalibration_fitting import CROSS_FIT_FOLDS
from app.services.support import proximity_forest_work
from calibcore.data import PredictionSet
from calibcore.metrics import assign_bins, equal_width_edges
from calibcore.recalibration import SWCHH, LoRe

__all__ = ["COMPARISON_BOOTSTRAP", "recalibration_seconds", "recalibration_terms"]

#: Bootstrap resamples of the comparison table's intervals.
COMPARISON_BOOTSTRAP = 100

#: LoRe's kernel sums sweep in up to this many dimensions, else sum every pair
#: (:mod:`calibcore.local`; the LCE's estimate counts them the same way).
_SWEEP_DIMENSIONS = 3
#: Methods that average the nearest calibration rows by KL (Valk & Kull 2023).
_NEIGHBOURHOOD_METHODS = ("lece", "lecd")


def recalibration_terms(prediction_set: PredictionSet, specs: Sequence[MethodSpec],
                        n_bootstrap: int = COMPARISON_BOOTSTRAP
                        ) -> tuple[dict[str, float], int]:
    """The work of fitting and comparing ``specs``, counted before starting (see
    :class:`app.services.cost.CostModel`), and the fits per method.

    A split fits once on the calibration rows; cross-fitting fits every fold and then all
    rows. Methods count their fits' rows and the table's cells (rows x feature
    columns, read and written with each method's columns); SWC counts its proximity
    forests; SWC-HH also its HH filter's local forests and the rows voted through it;
    LECE and LECD (alone or as a step of a composition) their neighbour searches; the
    comparison counts its bootstrap resamples of the rows.

    The neighbour searches: two classes search the calibration rows sorted by P(class 1)
    (``lece_rows``, O(n log n); with row weights ``lece_weighted_rows``, O(n log^2 n));
    more classes compare every query row with every calibration row (``lece_pairs``,
    O(n^2)). Choosing q and t by cross-validation searches every fit's rows; correcting
    searches every row of the table. LoRe sums a kernel over the calibration rows of each
    row's confidence bin: in up to 3 dimensions by sweeps (``lore_rows``, O(n log^d n)),
    in more by every pair of a bin (``lore_pairs``: pairs x dimensions). Every method
    reads and writes the table's probabilities (``class_rows``: rows x classes).
    """
    split = prediction_set.split is not None
    n_calibration = (int(prediction_set.mask("calibration").sum()) if split
                     else prediction_set.n_rows)
    fits = ([n_calibration] if split else
            [n_calibration * (CROSS_FIT_FOLDS - 1) // CROSS_FIT_FOLDS] * CROSS_FIT_FOLDS
            + [n_calibration])
    terms = {"fixed": 1.0, "methods": float(len(specs)),
             "method_rows": float(len(specs) * sum(fits)),
             "compare_rows": float(len(specs) * prediction_set.n_rows * n_bootstrap),
             "method_cells": float(len(specs) * prediction_set.n_rows
                                   * prediction_set.features.shape[1]),
             "class_rows": float(len(specs) * prediction_set.n_rows * prediction_set.n_classes),
             "forest": 0.0, "lece_rows": 0.0, "lece_weighted_rows": 0.0, "lece_pairs": 0.0,
             "lore_rows": 0.0, "lore_pairs": 0.0}
    pairwise = prediction_set.n_classes > 2
    search = ("lece_pairs" if pairwise else
              "lece_weighted_rows" if prediction_set.weighted else "lece_rows")
    for spec in specs:
        for params in _neighbourhood_steps(spec):
            searched = params.get("neighborhood_size") is None or params.get("threshold") is None
            for n_fit in fits:
                query_rows = float(searched) * n_fit + prediction_set.n_rows
                terms[search] += query_rows * n_fit if pairwise else query_rows
        if spec.method == "lore":
            for name, value in _lore_terms(prediction_set, spec, fits).items():
                terms[name] += value
        if spec.method not in ("swc", "swc_hh"):
            continue
        n_features = len(spec.features or prediction_set.features.columns)
        terms["forest"] += proximity_forest_work([float(f) for f in fits],
                                                 n_features + prediction_set.n_classes)
        if spec.method == "swc_hh":  # its HH filter: every calibration row, at its grid
            defaults = SWCHH()
            hh_filter = HeterogeneityParams(
                radius=float(spec.params.get("radius", defaults.radius)), sample=None,
                calibration_sample=None, grid=spec.params.get("hh_grid", defaults.hh_grid))
            hh = heterogeneity_terms(prediction_set, hh_filter, n_features)[0]
            for name in ("forests", "forest_rows", "forest_rows_features"):
                terms[f"swc_hh_{name}"] = (terms.get(f"swc_hh_{name}", 0.0)
                                           + len(fits) * hh[name])
            # every row of the table is voted for through the filter, per fit
            terms["swc_hh_rows"] = (terms.get("swc_hh_rows", 0.0)
                                    + len(fits) * float(prediction_set.n_rows))
    return terms, len(fits)


def recalibration_seconds(terms: dict[str, float]) -> float:
    """Seconds of :func:`recalibration_terms` by the ``recalibration`` model. SWC-HH's HH
    filter is counted as an HH job counts its local forests (``swc_hh_`` terms) but
    priced from SWC-HH's own runs: against every calibration row, with the filtered
    votes after it, a forest costs more than in an HH job (on default_nb 5.2 s
    measured where the HH model said 0.7 s)."""
    return cost_model("recalibration").seconds(terms)


def _lore_terms(prediction_set: PredictionSet, spec: MethodSpec,
                fits: list[int]) -> dict[str, float]:
    """LoRe's kernel sums: each row of the table against the calibration rows of its
    confidence bin, per fit, in the representation's dimensions (PCA components, else the
    feature columns; one-hot levels are not counted)."""
    n_columns = len(spec.params.get("columns") or prediction_set.features.columns)
    reducer = spec.params.get("reducer", "pca")
    defaults = LoRe()
    components = int(spec.params.get("n_components", defaults.n_components))
    dimensions = min(components, n_columns) if reducer == "pca" else n_columns
    if dimensions <= _SWEEP_DIMENSIONS:
        size = float(sum(fits)) + len(fits) * prediction_set.n_rows
        return {"lore_rows": size * float(np.log2(size + 1.0)) ** dimensions}
    edges = equal_width_edges(int(spec.params.get("n_bins", defaults.n_bins)))
    per_bin = np.bincount(assign_bins(prediction_set.proba.max(axis=1), edges)).astype(float)
    share = float(sum(fits)) / prediction_set.n_rows  # of each bin's rows, fitted on
    return {"lore_pairs": share * float(np.sum(per_bin * per_bin)) * dimensions}


def neighbourhood_method(spec: MethodSpec) -> bool:
    """Whether ``spec`` searches KL neighbourhoods (LECE, LECD, or a composition with one)."""
    return bool(_neighbourhood_steps(spec))


def _neighbourhood_steps(spec: MethodSpec) -> list[dict[str, Any]]:
    """The parameters of each LECE or LECD step of ``spec`` (a composition's default steps
    are temperature scaling, then LECE)."""
    if spec.method in _NEIGHBOURHOOD_METHODS:
        return [spec.params]
    if spec.method != "composed":
        return []
    steps = spec.params.get("steps")
    if steps is None:
        return [{}]
    return [params for method, params in map(composition_step,
                                             steps if isinstance(steps, list) else [])
            if method in _NEIGHBOURHOOD_METHODS]
