"""Variable-based calibration of a stored dataset (Kelly & Smyth 2023).

The VECE ranking of every feature (cached per parameter set, run as a job when
large), the calibration curves of one variable (LOESS error and predicted
error with 95% bands for a numeric variable, a per-category table for a
categorical one), and VECE of one variable for any probabilities (used to
compare recalibrators).

A variable is *categorical* exactly when :func:`calibcore.variable.rank_variables`
treats it so: strings, booleans and categoricals, and numeric columns with at
most :data:`MAX_CATEGORIES` distinct values. The detail view uses the same rule,
so a variable's VECE and VCE(v*) agree between the ranking and its plot.

A weighted dataset (a weight column or ``negative_rate``) is measured on its weighted
rows: equal-weight bins and weighted VECE, LOESS curves whose windows hold a share of
the weight, and a permutation test that keeps each row's weight with its outcome
(:mod:`calibcore.variable`); the results carry Kish's effective n like every weighted
diagnostic (:func:`app.services.weighting.weighting`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from app.jobs import Job, JobRunner, Progress
from app.services.cache import cache_key
from app.services.cost import CostEstimate, cost_model
from app.services.datasets import DatasetService
from app.services.diagnostics import Subset, rows_for
from app.services.jsonable import jsonable
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from app.store import Store
from calibcore.data import PredictionSet
from calibcore.exceptions import CalibrationInputError
from calibcore.variable import (
    CurveRange,
    VariableView,
    loess_curves,
    rank_variables,
    variable_bins,
    variable_ece,
)

#: Numeric columns with at most this many distinct values are categorical
#: (``rank_variables``' default ``max_categories``).
MAX_CATEGORIES = 10
#: A variable's fixed cost (its LOESS curves) in rows: ranking takes about
#: ``n_variables * (VARIABLE_OVERHEAD_ROWS + n_rows)`` row operations (4 µs each here).
VARIABLE_OVERHEAD_ROWS = 40_000
#: Rankings of at most this much work (about a second) are computed in the request;
#: larger ones run as a job.
SYNC_WORK = 300_000
#: Significance level used to flag variables (permutation p-value below it).
SIGNIFICANCE_LEVEL = 0.05
#: Bumped when the cached ranking's content changes, so old caches are not reused (2: error
#: intervals always contain the error rate; LOESS windows of only tied rows widened; 3: row
#: weights).
_CACHE_VERSION = 3

VariableKind = Literal["numeric", "categorical"]


class UnknownVariable(LookupError):
    """A variable name that is not a feature column of the dataset."""

    def __init__(self, name: str, available: list[str]) -> None:
        shown = ", ".join(available[:40]) or "none"
        super().__init__(f"no feature column {name!r} in this dataset; its variables are: "
                         f"{shown}.")
        self.name = name
        self.available = available


@dataclass(frozen=True)
class RankingParams:
    """Everything a ranking depends on (and its cache key is made of)."""

    n_bins: int = 10
    n_permutations: int = 200
    span: float = 0.8
    n_points: int = 500
    subset: Subset = "all"
    random_state: int = 0
    view: VariableView = "top_label"

    def cache_key(self, dataset_id: str) -> str:
        """``<dataset_id>.variables.<hash>``: deleted with the dataset."""
        return cache_key(dataset_id, "variables", **asdict(self), version=_CACHE_VERSION)


@dataclass(frozen=True)
class RankingRequest:
    """A ranking that is ready (``ranking``) or running as ``job``; exactly one is set."""

    ranking: dict[str, Any] | None = None
    job: Job | None = None


# -- variables and their kinds -------------------------------------------------------------
def variable_names(prediction_set: PredictionSet) -> list[str]:
    """The feature columns, in table order."""
    return [str(column) for column in prediction_set.features.columns]


def variable_kind(values: pd.Series) -> VariableKind:
    """Numeric or categorical, by the rule of :func:`calibcore.variable.rank_variables`."""
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        return "categorical"
    finite = values.to_numpy(dtype=np.float64, na_value=np.nan)
    finite = finite[np.isfinite(finite)]
    return "categorical" if np.unique(finite).size <= MAX_CATEGORIES else "numeric"


def _n_present(values: pd.Series, kind: VariableKind) -> int:
    """Rows where the variable is present (finite, for a numeric one)."""
    return int(_present(values, kind).sum())


def _present(values: pd.Series, kind: VariableKind) -> NDArray[np.bool_]:
    """Where the variable is present (finite, for a numeric one)."""
    if kind == "categorical":
        return np.asarray(values.notna().to_numpy(), dtype=bool)
    return np.isfinite(values.to_numpy(dtype=np.float64, na_value=np.nan))


def _column(prediction_set: PredictionSet, name: str) -> pd.Series:
    names = variable_names(prediction_set)
    if name not in names:
        raise UnknownVariable(name, names)
    return prediction_set.features[name].reset_index(drop=True)


# -- ranking -------------------------------------------------------------------------------
def compute_ranking(prediction_set: PredictionSet, params: RankingParams,
                    progress: Progress | None = None) -> dict[str, Any]:
    """VECE ranking of every feature on the rows of ``params.subset`` (JSON-able).

    Returns
    -------
    dict
        ``variables``: one entry per feature, sorted by VECE descending, with
        ``variable, kind, vece, vce_max, v_star, p_value, n, n_missing`` and
        ``significant`` (p-value below :data:`SIGNIFICANCE_LEVEL`); plus the
        parameters, ``n`` (rows in the subset) and ``min_p_value`` (the
        smallest p-value the permutation test can give).
    """
    if prediction_set.features.shape[1] == 0:
        raise CalibrationInputError("this dataset has no feature columns, so there are no "
                                    "variables to rank; upload it with feature columns.",
                                    code="no_features")
    mask = rows_for(prediction_set, params.subset)
    names = variable_names(prediction_set)

    def report(done: float, total: int) -> None:
        if progress is not None:
            progress.update(done / total, f"ranking {total} variables (curves and "
                            f"permutations): {done / total:.0%}")

    if progress is not None:
        progress.update(0.0, f"ranking {len(names)} variables on {int(mask.sum()):,} rows")
    table = rank_variables(
        prediction_set.features.loc[mask].reset_index(drop=True),
        prediction_set.y_true[mask], prediction_set.proba[mask], n_bins=params.n_bins,
        span=params.span, n_points=params.n_points, n_permutations=params.n_permutations,
        max_categories=MAX_CATEGORIES, random_state=params.random_state, progress=report,
        view=params.view, sample_weight=prediction_set.weights_of(mask))
    rows = jsonable(table.to_dict("records"))
    for row in rows:
        p_value = row["p_value"]
        row["significant"] = None if p_value is None else bool(p_value < SIGNIFICANCE_LEVEL)
    return {
        **asdict(params), "n": int(mask.sum()), "significance_level": SIGNIFICANCE_LEVEL,
        "min_p_value": (1 / (1 + params.n_permutations) if params.n_permutations else None),
        "variables": rows, **weighting(prediction_set, mask),
    }


def ranking_is_fast(prediction_set: PredictionSet, params: RankingParams) -> bool:
    """Whether the ranking is small enough to compute within a request (about a second)."""
    return ranking_work(prediction_set, params) <= SYNC_WORK


def ranking_work(prediction_set: PredictionSet, params: RankingParams) -> int:
    """Estimated cost of a ranking in row operations (see :data:`VARIABLE_OVERHEAD_ROWS`)."""
    n_rows = int(rows_for(prediction_set, params.subset).sum())
    return prediction_set.features.shape[1] * (VARIABLE_OVERHEAD_ROWS + n_rows)


def request_ranking(services: ServiceContext, dataset_id: str, params: RankingParams, *,
                    as_job: bool = False) -> RankingRequest:
    """The cached ranking, a freshly computed one when fast, or a job computing it.

    A job already running for the same dataset and parameters is reused rather
    than started again. The finished ranking is cached in the store.
    """
    store, datasets, jobs = services.store, services.datasets, services.jobs
    prediction_set = datasets.prediction_set(dataset_id)
    key = params.cache_key(dataset_id)
    if store.has_document(key):
        return RankingRequest(ranking={**store.read_document(key), "cached": True})
    rows_for(prediction_set, params.subset)  # a missing split is an input error, not a job
    if not as_job and ranking_is_fast(prediction_set, params):
        return RankingRequest(ranking=_compute_and_cache(store, datasets, dataset_id, params))
    running = _running_job(store, jobs, key)
    if running is not None:
        return RankingRequest(job=running)

    def work(progress: Progress) -> dict[str, Any]:
        return _compute_and_cache(store, datasets, dataset_id, params, progress)

    estimate = estimate_ranking(prediction_set, params)
    job = jobs.submit("variables", work, params={"dataset_id": dataset_id, **asdict(params)},
                      estimate=estimate.as_dict())
    store.write_document(f"{key}.job", {"job_id": job.id})
    return RankingRequest(job=job)


def _compute_and_cache(store: Store, datasets: DatasetService, dataset_id: str,
                       params: RankingParams, progress: Progress | None = None
                       ) -> dict[str, Any]:
    ranking = {"dataset_id": dataset_id,
               **compute_ranking(datasets.prediction_set(dataset_id), params, progress)}
    datasets.record(dataset_id)  # deleted meanwhile: raise rather than leave an orphan cache
    store.write_document(params.cache_key(dataset_id), ranking)
    return {**ranking, "cached": False}


def _running_job(store: Store, jobs: JobRunner, key: str) -> Job | None:
    if not store.has_document(f"{key}.job"):
        return None
    job = jobs.get(str(store.read_document(f"{key}.job")["job_id"]))
    return job if job is not None and job.status in ("queued", "running") else None


# -- one variable --------------------------------------------------------------------------
def variable_detail(prediction_set: PredictionSet, name: str, *, span: float = 0.8,
                    n_points: int = 500, n_bins: int = 10, subset: Subset = "all",
                    curve_range: CurveRange = "5-95", random_state: int = 0,
                    view: VariableView = "top_label") -> dict[str, Any]:
    """Calibration of one variable (Kelly & Smyth 2023, Figure 1b), JSON-able, in the
    paper's top-label view or (binary models) the positive view, where "error" is
    1[y != 1] and "predicted error" 1 - P(class 1).

    Numeric variables: the LOESS curves of error and predicted error with 95%
    bands (``curves``: x, error, error_low, error_high, predicted_error, ...,
    vce_max, v_star, histogram_edges, histogram_counts, exact, curve_range),
    drawn between the quantiles of ``curve_range`` ("5-95", "1-99" or "all"),
    and the equal-mass bins behind VECE (``bins``). VCE(v*) and v* are over the
    drawn range, so a wider range can find a larger gap in the tails.
    Categorical variables: ``bins`` holds one row per category (n, error with
    its Wilson interval, predicted error with its t interval, gap), ``curves``
    is None and ``vce_max`` /
    ``v_star`` are the largest category gap and that category.

    Raises
    ------
    UnknownVariable
        When ``name`` is not a feature column.
    """
    values = _column(prediction_set, name)
    mask = rows_for(prediction_set, subset)
    values = values[mask].reset_index(drop=True)
    labels, proba = prediction_set.y_true[mask], prediction_set.proba[mask]
    weights = prediction_set.weights_of(mask)
    kind = variable_kind(values)
    n_used = _n_present(values, kind)
    if n_used == 0:
        raise CalibrationInputError(f"variable {name!r} has no non-missing values on the "
                                    f"{subset} rows.", code="empty_variable", column=name)
    if weights is not None and not (weights[_present(values, kind)] > 0).any():
        raise CalibrationInputError(f"variable {name!r} is present only on rows of weight 0 "
                                    f"on the {subset} rows.", code="empty_variable",
                                    column=name)
    bins = variable_bins(values, labels, proba, n_bins=n_bins, kind=kind, view=view,
                         sample_weight=weights)
    result: dict[str, Any] = {
        "variable": name, "kind": kind, "subset": subset, "view": view, "n": n_used,
        "n_missing": int(values.size - n_used), "n_bins": n_bins, "span": span,
        "curve_range": curve_range,
        "vece": variable_ece(values, labels, proba, n_bins=n_bins, kind=kind, view=view,
                             sample_weight=weights),
        "bins": bins.to_dict("list"), "curves": None,
    }
    if kind == "categorical":
        worst = int(np.argmax(np.abs(bins["gap"].to_numpy())))
        result["vce_max"] = float(abs(bins["gap"].iloc[worst]))
        result["v_star"] = bins["bin"].iloc[worst]
    else:
        curves = loess_curves(values, labels, proba, span=span, n_points=n_points,
                              random_state=random_state, curve_range=curve_range, view=view,
                              sample_weight=weights)
        result["curves"] = curves
        result["vce_max"], result["v_star"] = curves.vce_max, curves.v_star
    return jsonable({**result, **weighting(prediction_set, mask)})


def vece_for(prediction_set: PredictionSet, name: str, proba: NDArray[np.float64], *,
             rows: NDArray[np.bool_] | None = None, n_bins: int = 10) -> float:
    """VECE of variable ``name`` for probabilities ``proba`` (e.g. recalibrated ones).

    Parameters
    ----------
    prediction_set : PredictionSet
        Supplies the labels and the variable's values.
    name : str
        A feature column.
    proba : ndarray of shape (n_rows, K)
        Probabilities for every row of the dataset (rows outside ``rows`` are ignored).
    rows : ndarray of bool of shape (n_rows,), optional
        Rows to score (e.g. the held-out rows); all rows by default.
    n_bins : int, default=10
        Equal-mass bins of a numeric variable.

    Returns
    -------
    float
        VECE with the same numeric/categorical rule as the ranking (weighted on a
        weighted dataset); NaN when the variable has no non-missing value of positive
        weight on those rows.
    """
    values = _column(prediction_set, name)
    mask = np.ones(prediction_set.n_rows, dtype=bool) if rows is None else np.asarray(rows)
    values = values[mask].reset_index(drop=True)
    kind = variable_kind(values)
    weights = prediction_set.weights_of(mask)
    present = _present(values, kind)
    if not present.any() or (weights is not None and not (weights[present] > 0).any()):
        return float("nan")
    return variable_ece(values, prediction_set.y_true[mask], np.asarray(proba)[mask],
                        n_bins=n_bins, kind=kind, sample_weight=weights)


def ranking_for_report(prediction_set: PredictionSet, *, random_state: int = 0
                       ) -> dict[str, Any] | None:
    """The default ranking for the offline report; None when there are no features."""
    if prediction_set.features.shape[1] == 0:
        return None
    return compute_ranking(prediction_set, RankingParams(random_state=random_state))


def ranking_terms(prediction_set: PredictionSet, params: RankingParams) -> dict[str, float]:
    """The work of a ranking, counted before starting (see
    :class:`app.services.cost.CostModel`): each variable's fixed part (its LOESS curves)
    and its rows, both times the permutations (and the observed ranking); the shuffles of
    the permutation nulls, one set per distinct set of rows with a value (variables
    sharing their rows share them); with row weights, the weighted null's extra work per
    row as a term of its own (each weighted null shuffles for itself)."""
    rows = rows_for(prediction_set, params.subset)
    n_rows = float(rows.sum())
    n_variables = float(prediction_set.features.shape[1])
    rounds = (1 + params.n_permutations) / 201
    variable_rows = n_variables * n_rows * rounds
    missing = prediction_set.features[rows].isna().to_numpy()
    row_sets = len({np.packbits(column).tobytes() for column in missing.T})
    return {"fixed": 1.0, "rows": n_rows, "variables": n_variables * rounds,
            "variable_rows": variable_rows,
            "shuffled_rows": 0.0 if prediction_set.weighted else row_sets * n_rows * rounds,
            "weighted_variable_rows": variable_rows if prediction_set.weighted else 0.0}


def estimate_ranking(prediction_set: PredictionSet, params: RankingParams) -> CostEstimate:
    """Seconds of a ranking, before starting (:func:`ranking_terms` times the fitted model)."""
    n_rows = int(rows_for(prediction_set, params.subset).sum())
    basis = (f"{prediction_set.features.shape[1]} variables on {n_rows:,} rows, "
             f"{params.n_permutations} permutations")
    return cost_model("variables").estimate(ranking_terms(prediction_set, params), basis)
