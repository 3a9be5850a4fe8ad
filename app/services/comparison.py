"""The honest comparison of recalibrators on held-out rows, and a recommendation.

Every row of the table is scored on the same held-out rows (test rows of the
split, or every row under cross-fitting, each by a model fitted without it):
ECE, smooth ECE, kCE, Brier, NLL and accuracy with bootstrap 95% intervals
(:func:`calibcore.metrics.global_measures`, the same seeded resamples for
every row), MLCE (Luo et al. 2022; on a seeded sample of :data:`MLCE_MAX_ROWS` rows
when there are more, the same rows for every method) and the largest VECE over
all variables, numeric and categorical, by the Variables ranking's rule
(Kelly & Smyth 2023; :func:`app.services.variables.variable_kind`; the bins of each
variable are found once and shared by every method) as point estimates, and
VECE along the variable of each variable-based tree with an interval.

On a weighted dataset the table is that of the weighted held-out rows: the global
measures and their intervals (:func:`calibcore.metrics.global_measures` with
``sample_weight``), the VECE columns (:func:`calibcore.variable.variable_ece` with
``sample_weight``: equal-weight bins, weighted means), the diagrams and the
recommendation's NLL and Brier with their paired intervals, every resample drawing rows
that carry their weights; so integer weights give what the rows repeated by their
weights give. The MLCE is the weighted one (each row's kernel weight times its row
weight, the largest LCE over rows of positive weight, Luo et al. 2022, eq. 5); its
representation phi is fitted on the rows unweighted, and its note says so.

The recommendation (:mod:`app.services.recommendation`) weighs both proper scores,
NLL and Brier, with paired bootstrap intervals of their differences, and the
calibration errors: a method that makes every calibration error and Brier worse is
never advised on NLL alone.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from app.services.jsonable import jsonable
from app.services.recommendation import (
    CONFIDENCE_LEVEL,
    METHOD_COMPLEXITY,
    Candidate,
    paired_difference,
    paired_differences,
    recommend,
)
from app.services.variables import VariableKind, variable_kind
from calibcore.data import View
from calibcore.exceptions import CalibrationInputError
from calibcore.local import fit_representation, local_calibration
from calibcore.metrics import MeasureName, binned_reliability, global_measures
from calibcore.variable import variable_ece, variable_eces

#: Bandwidth and representation of the MLCE column (Luo et al. 2022 use gamma = 0.4 on PCA-20).
MLCE_GAMMA = 0.4
MLCE_COMPONENTS = 20
#: Above this many held-out rows MLCE is computed on a seeded sample of this many (the
#: same rows for every method): every row's LCE is a kernel sum over its confidence bin,
#: so 1.5M rows in 6 dimensions take minutes per method, 10,000 rows about half a second.
MLCE_MAX_ROWS = 10_000

#: ``progress(fraction, message)`` of a comparison.
ProgressCallback = Callable[[float, str], None]

_GLOBAL_KEYS: tuple[MeasureName, ...] = (
    "ece", "smooth_ece", "laplace_kernel_calibration_error", "brier", "nll", "accuracy")


@dataclass(frozen=True)
class Column:
    """One column of the comparison table."""

    key: str
    label: str
    better: Literal["lower", "higher"]
    meaning: str


COLUMNS: tuple[Column, ...] = (
    Column("ece", "ECE", "lower", "binned |confidence − accuracy| (top label, equal-width bins)"),
    Column("smooth_ece", "smooth ECE", "lower", "kernel-smoothed ECE (relplot's smECE)"),
    Column("laplace_kernel_calibration_error", "kCE", "lower",
           "Laplace-kernel calibration error, exact"),
    Column("brier", "Brier", "lower", "squared error summed over classes, 0 to 2"),
    Column("nll", "NLL", "lower", "mean −log probability of the true class"),
    Column("accuracy", "accuracy", "higher", "share of rows whose top class is right"),
    Column("mlce", "MLCE", "lower",
           f"largest local calibration error (γ = {MLCE_GAMMA}, standardized features, PCA ≤ "
           f"{MLCE_COMPONENTS}); a maximum, so no interval"),
    Column("max_vece", "max VECE (all variables)", "lower",
           "largest variable-based ECE over every feature, numeric (10 equal-mass bins) and "
           "categorical (one bin per category), as the Variables page ranks them; a maximum, "
           "so no interval"),
)


def compare(labels: NDArray[np.intp], candidates: list[Candidate], features: pd.DataFrame,
            *, n_bins: int = 15, n_bootstrap: int = 100,
            random_state: int = 0, progress: ProgressCallback | None = None,
            sample_weight: NDArray[np.float64] | None = None) -> dict[str, Any]:
    """The comparison table, best marks, reliability diagrams and the recommendation.

    Parameters
    ----------
    labels : ndarray of shape (n,)
        Class indices of the held-out rows.
    candidates : list of Candidate
        The uncalibrated probabilities first, then each recalibration's, all (n, K).
    features : DataFrame
        Feature columns of the held-out rows.
    progress : callable, optional
        ``progress(fraction, message)``, called between steps and resamples (it may
        raise to stop).
    sample_weight : ndarray of shape (n,), optional
        Row weights of the held-out rows (every column is weighted; MLCE's representation
        phi is fitted on the rows unweighted).
    """
    report = progress or _nothing
    mlce_rows = _mlce_rows(labels.size, random_state)
    phi, mlce_note = _mlce_space(features if mlce_rows is None else features.iloc[mlce_rows])
    if mlce_rows is not None and phi is not None:
        mlce_note = (f"on a seeded sample of {mlce_rows.size:,} of the {labels.size:,} rows "
                     f"(the same for every method); {mlce_note}").strip("; ")
    mlce_weights = (None if sample_weight is None else
                    sample_weight if mlce_rows is None else sample_weight[mlce_rows])
    if mlce_weights is not None and phi is not None:
        if (mlce_weights > 0).any():
            mlce_note = ("weighted: each row's kernel weight times its row weight, the largest "
                         "LCE over rows of positive weight, phi fitted on the rows unweighted; "
                         + mlce_note).strip("; ")
        else:
            phi, mlce_note = None, "not computed: every row of its sample weighs 0"
    variables = sorted({c.variable for c in candidates if c.variable})
    columns = list(COLUMNS) + [Column(f"vece:{v}", f"VECE({v})", "lower",
                                      f"variable-based ECE along {v} (10 equal-mass bins)")
                               for v in variables]
    report(0.0, "bootstrap intervals and the largest VECE over the variables")
    # the largest VECE (binned passes over every variable, in NumPy) on a thread of its own
    # beside the candidates' intervals: 1.5M rows and 6 variables, 1.0 s of a 3.0 s
    # comparison that kept the other core idle
    with ThreadPoolExecutor(1, thread_name_prefix="max-vece") as pool:
        largest = pool.submit(_max_vece, features, labels, [c.proba for c in candidates],
                              sample_weight)
        rows: list[dict[str, Any]] = []
        for number, candidate in enumerate(candidates):
            def step(fraction: float, message: str, number: int = number) -> None:
                report((number + fraction) / (len(candidates) + 1),
                       f"{message} of {candidates[number].name}")

            step(0.0, "bootstrap intervals")
            values = _global_values(labels, candidate.proba, n_bins, n_bootstrap, random_state,
                                    lambda done: step(0.8 * done, "bootstrap intervals"),
                                    sample_weight)
            step(0.8, "MLCE")
            values["mlce"] = _mlce(phi, labels if mlce_rows is None else labels[mlce_rows],
                                   candidate.proba if mlce_rows is None
                                   else candidate.proba[mlce_rows], mlce_note,
                                   lambda: step(0.8, "MLCE"), mlce_weights)
            values["max_vece"] = {}  # (its place in the row; filled below)
            for variable in variables:
                heartbeat = partial(step, 0.9, f"VECE({variable}) interval")
                values[f"vece:{variable}"] = _vece_interval(
                    features[variable], labels, candidate.proba, n_bootstrap, random_state,
                    heartbeat, sample_weight)
            rows.append({"id": candidate.id, "name": candidate.name, "method": candidate.method,
                         "values": values})
        for row, value in zip(rows, largest.result(), strict=True):
            row["values"]["max_vece"] = value
    _mark_best(rows, columns)
    report(len(candidates) / (len(candidates) + 1), "paired NLL and Brier differences")
    return jsonable({
        "n": int(labels.size), "n_bootstrap": n_bootstrap, "confidence_level": CONFIDENCE_LEVEL,
        "columns": columns, "rows": rows, "mlce_note": mlce_note,
        # the MLCE depends on both: every place that shows it says them
        "mlce_gamma": MLCE_GAMMA,
        "mlce_space": None if phi is None else f"PCA({phi.shape[1]}) of standardized features",
        "recommendation": recommend(labels, candidates, rows, n_bootstrap, random_state,
                                    sample_weight),
        "reliability": _diagrams(labels, candidates, n_bins, "top_label", sample_weight),
        # binary: the diagram of P(second class) as well, the reading most users know
        "positive_reliability": (_diagrams(labels, candidates, n_bins, "positive",
                                           sample_weight)
                                 if candidates[0].proba.shape[1] == 2 else None),
    })


def _diagrams(labels: NDArray[np.intp], candidates: list[Candidate], n_bins: int,
              view: View, weights: NDArray[np.float64] | None = None) -> list[dict[str, Any]]:
    """One binned held-out diagram of the view per candidate."""
    return [{"id": c.id, "name": c.name,
             "diagram": binned_reliability(labels, c.proba, n_bins=n_bins, view=view,
                                           sample_weight=weights)[0]}
            for c in candidates]


def _nothing(fraction: float, message: str) -> None:
    """The default progress callback."""


def _global_values(labels: NDArray[np.intp], proba: NDArray[np.float64], n_bins: int,
                   n_bootstrap: int, random_state: int,
                   progress: Callable[[float], None],
                   weights: NDArray[np.float64] | None = None) -> dict[str, dict[str, Any]]:
    result = global_measures(labels, proba, n_bins=n_bins, n_bootstrap=n_bootstrap,
                             random_state=random_state, measures=list(_GLOBAL_KEYS),
                             interval="hybrid", progress=progress, sample_weight=weights)
    return {m.key: {"value": m.value, "low": m.low, "high": m.high, "plug_in": m.plug_in,
                    "note": m.note} for m in result.measures}


def _mlce_rows(n_rows: int, random_state: int) -> NDArray[np.intp] | None:
    """The seeded sample of rows MLCE is computed on (None: every row)."""
    if n_rows <= MLCE_MAX_ROWS:
        return None
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(n_rows, size=MLCE_MAX_ROWS, replace=False))


def _mlce_space(features: pd.DataFrame) -> tuple[NDArray[np.float64] | None, str]:
    """Standardized, one-hot, imputed features, PCA'd to at most 20 dimensions."""
    if features.shape[1] == 0:
        return None, "no feature columns"
    try:
        representation = fit_representation(features, reducer="pca",
                                             n_components=MLCE_COMPONENTS)
    except CalibrationInputError as exc:
        return None, f"not computed: {exc.message}"
    return representation.transform(features), " ".join(representation.notes)


def _mlce(phi: NDArray[np.float64] | None, labels: NDArray[np.intp],
          proba: NDArray[np.float64], note: str, heartbeat: Callable[[], None],
          weights: NDArray[np.float64] | None = None) -> dict[str, Any]:
    if phi is None:
        return {"value": None, "low": None, "high": None, "note": note}
    value = local_calibration(phi, labels, proba, gamma=MLCE_GAMMA,
                              progress=lambda *_: heartbeat(), sample_weight=weights).mlce
    return {"value": value, "low": None, "high": None, "note": note}


def _max_vece(features: pd.DataFrame, labels: NDArray[np.intp],
              probas: list[NDArray[np.float64]],
              weights: NDArray[np.float64] | None = None) -> list[dict[str, Any]]:
    """The largest VECE over all variables for each set of probabilities (bins shared).

    Each variable is numeric or categorical by the ranking's rule, so the column agrees
    with the Variables page: a categorical variable at the top of the ranking is the one
    named here too (on the same rows). ``weights`` weigh the rows (a variable whose
    present rows all weigh 0 has no weighted VECE and is left out).
    """
    groups: dict[VariableKind, list[str]] = {"numeric": [], "categorical": []}
    for column in features.columns:
        values = features[column]
        kind = variable_kind(values)
        present = (values.notna() if kind == "categorical" else
                   np.isfinite(values.to_numpy(dtype=np.float64, na_value=np.nan)))
        if present.any() and (weights is None or bool((weights[np.asarray(present)] > 0).any())):
            groups[kind].append(column)
    scores: dict[str, NDArray[np.float64]] = {}
    kinds: dict[str, VariableKind] = {}
    for group, columns in groups.items():
        if columns:
            table = variable_eces([features[column] for column in columns], labels, probas,
                                  kind=group, sample_weight=weights)
            scores.update({str(column): table[row] for row, column in enumerate(columns)})
            kinds.update({str(column): group for column in columns})
    if not scores:
        note = "no feature columns" if features.shape[1] == 0 else "feature columns are empty"
        return [{"value": None, "low": None, "high": None, "note": note} for _ in probas]
    results = []
    for number in range(len(probas)):
        worst = max(scores, key=lambda c: scores[c][number])
        results.append({"value": float(scores[worst][number]), "low": None, "high": None,
                        "note": f"along {worst} ({kinds[worst]})", "variable": worst})
    return results


def _vece_interval(values: pd.Series, labels: NDArray[np.intp], proba: NDArray[np.float64],
                   n_bootstrap: int, random_state: int,
                   heartbeat: Callable[[], None],
                   weights: NDArray[np.float64] | None = None) -> dict[str, Any]:
    v = values.to_numpy(dtype=np.float64, na_value=np.nan)
    estimate = variable_ece(v, labels, proba, kind="numeric", sample_weight=weights)
    if not n_bootstrap:
        return {"value": estimate, "low": None, "high": None, "note": ""}
    # Resample (v, label, probabilities) rows together: stack v (and each row's weight)
    # as extra columns, so a resampled row keeps its weight.
    if weights is None:
        stacked = np.column_stack([proba, v])

        def measure(y: NDArray[np.generic], rows: NDArray[np.float64]) -> float:
            return variable_ece(rows[:, -1], y, rows[:, :-1], kind="numeric")
    else:
        stacked = np.column_stack([proba, weights, v])

        def measure(y: NDArray[np.generic], rows: NDArray[np.float64]) -> float:
            try:
                return variable_ece(rows[:, -1], y, rows[:, :-2], kind="numeric",
                                    sample_weight=rows[:, -2])
            except CalibrationInputError:  # a resample whose rows all weigh 0
                return float("nan")

    interval = _row_bootstrap(measure, labels, stacked, n_bootstrap, random_state, heartbeat)
    return {"value": estimate, "low": interval[0], "high": interval[1], "note": ""}


def _row_bootstrap(measure: Any, labels: NDArray[np.intp], rows: NDArray[np.float64],
                   n_bootstrap: int, random_state: int,
                   heartbeat: Callable[[], None]) -> tuple[float, float]:
    """Percentile interval of ``measure`` over row resamples (rows carry v in the last column)."""
    rng = np.random.default_rng(random_state)
    values = np.empty(n_bootstrap)
    for resample in range(n_bootstrap):
        heartbeat()
        chosen = rng.integers(0, labels.size, size=labels.size)
        values[resample] = measure(labels[chosen], rows[chosen])
    low, high = np.nanquantile(values, [(1 - CONFIDENCE_LEVEL) / 2,
                                        (1 + CONFIDENCE_LEVEL) / 2])
    return float(low), float(high)


def _mark_best(rows: list[dict[str, Any]], columns: list[Column]) -> None:
    """Add ``best``: the keys of the columns where a row has the best value (ties shared)."""
    for row in rows:
        row["best"] = []
    if len(rows) < 2:
        return
    for column in columns:
        scored = [(row, row["values"][column.key]["value"]) for row in rows
                  if row["values"].get(column.key, {}).get("value") is not None]
        if len(scored) < 2:
            continue
        pick = max if column.better == "higher" else min
        target = pick(value for _, value in scored)
        for row, value in scored:
            if abs(value - target) <= 1e-12:
                row["best"].append(column.key)


__all__ = ["COLUMNS", "CONFIDENCE_LEVEL", "METHOD_COMPLEXITY", "Candidate", "Column",
           "compare", "paired_difference", "paired_differences", "recommend"]
