"""The ranking of variables by VECE (Kelly & Smyth 2023, Table 1), with VCE(v*), v* and a
permutation p-value per variable (beyond the paper, so that signal can be told from noise).

Each variable's VECE and curves come from :mod:`calibcore.variable.vece`; the permutations
of every variable are drawn in a background thread while the curves are fitted (the
variables' curves on every core at once), and the largest gap is searched only where the
curves are drawn: never inside a wide gap of V
(:func:`calibcore.variable._curves.gap_support`) nor where the fit is less certain than
one row.

With row weights each variable's VECE, bins, curves and VCE(v*) are the weighted ones of
:mod:`calibcore.variable.vece`, and the permutation test permutes V against the rows, each
keeping its weight (:func:`calibcore.variable._permutation.weighted_permuted_vece`).

Progress from the threads is gathered in :mod:`calibcore.variable._ranking_progress`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calibcore._progress import Heartbeat
from calibcore._validation import check_in_range, check_positive_int
from calibcore.variable._binning import (
    Variable,
    bin_index,
    binned_vece,
    feature_table,
    plain_weights,
    prepare_variable,
)
from calibcore.variable._curves import (
    Errors,
    VariableView,
    curve_points,
    row_support,
    variable_curves,
    view_errors,
)
from calibcore.variable._loess_moments import compile_fit_only
from calibcore.variable._loess_windows import enough_neighbours, relative_weights
from calibcore.variable._permutation import NullCache, compile_shuffle, permutation_p_value
from calibcore.variable._ranking_progress import RankingProgress, wait_for
from calibcore.variable.smoothing import (
    MAX_LEVERAGE,
    MIN_NEIGHBOURS,
    N_EXACT,
    loess_fit,
    loess_leverage,
)

__all__ = ["RANKING_COLUMNS", "rank_variables"]

#: Columns of the ranking table, in order.
RANKING_COLUMNS = ("variable", "kind", "vece", "vce_max", "v_star", "p_value", "n", "n_missing")


def rank_variables(
    features: object,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    span: float = 0.8,
    n_points: int = 500,
    n_permutations: int = 200,
    max_categories: int = 10,
    random_state: int | None = 0,
    progress: Callable[[int, int], None] | None = None,
    view: VariableView = "top_label",
    sample_weight: ArrayLike | None = None,
) -> pd.DataFrame:
    """Rank variables by VECE, with VCE(v*), v* and a permutation p-value.

    As in Kelly & Smyth 2023, Table 1.

    Parameters
    ----------
    features : pandas.DataFrame or array-like of shape (n, n_variables)
        One column per variable (columns of an array are named ``x0, x1, ...``).
        Strings, booleans, categoricals and numeric columns with at most
        ``max_categories`` distinct values are *categorical*: one bin per
        category. Other columns are *numeric*: equal-mass bins and LOESS curves.
    y_true, y_prob
        As in :func:`variable_ece`.
    n_bins : int, default=10
        Equal-mass bins for numeric variables.
    span, n_points
        As in :func:`loess_curves` (used for ``vce_max`` and ``v_star``).
    n_permutations : int, default=200
        Permutations of V against the (confidence, error) pairs; 0 skips the
        test (``p_value`` NaN).
    max_categories : int, default=10
        Numeric columns with at most this many distinct values are categorical.
    random_state : int or None, default=0
        Seed of the permutations (every variable uses the same seed, so a
        variable's p-value does not depend on the other columns).
    progress : callable, optional
        Called as ``progress(done, total)`` at most every 0.25 s, ``done`` rising
        from 0 to ``total`` (the number of variables) with the curves and the
        permutations (which are drawn in a background thread meanwhile), and
        ``(total, total)`` at the end; it may be called from the worker threads, and
        an exception raised by it stops the ranking and propagates.

    view : {"top_label", "positive"}, default="top_label"
        The paper's top-label errors, or (binary only) those of P(class 1).
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights: VECE, VCE(v*) and v* are those of
        :func:`variable_ece` and :func:`loess_curves` with these weights (so integer
        weights give the ranking of the rows repeated by their weights, p-values aside),
        and a permutation gives V to the rows in a random order, each row keeping its
        weight, and bins the result again. A variable whose present rows all weigh 0
        gets NaN.

    Returns
    -------
    pandas.DataFrame
        One row per variable, sorted by ``vece`` descending (NaN last), with
        columns ``variable``, ``kind`` ("numeric"/"categorical"), ``vece``,
        ``vce_max``, ``v_star``, ``p_value = (1 + #{permuted VECE >= VECE}) /
        (1 + n_permutations)``, ``n`` (rows used) and ``n_missing``.
        For a numeric variable ``vce_max`` and ``v_star`` are the largest gap
        between the LOESS curves and where it occurs, searched where the curves
        of :func:`loess_curves` are drawn (not strictly inside a wide gap of V with
        no rows, see :class:`LoessCurves`; NaN when there are too few rows to
        smooth); for a categorical one they are the largest
        ``|error - predicted error|`` over categories and that category.
    """
    errors = view_errors(y_true, y_prob, view)
    settings = _RankSettings(
        n_bins=check_positive_int(n_bins, "n_bins"),
        span=check_in_range(span, "span", low=0.0, high=np.inf, inclusive=False),
        n_points=check_positive_int(n_points, "n_points"),
        n_permutations=check_positive_int(n_permutations, "n_permutations", minimum=0),
        max_categories=check_positive_int(max_categories, "max_categories", minimum=0),
        random_state=random_state,
    )
    table = feature_table(features, errors.predicted.size)
    weights = plain_weights(sample_weight, errors.predicted.size)
    stop = threading.Event()
    tracker = RankingProgress(table.shape[1], settings.n_permutations,
                              Heartbeat(progress, 0, table.shape[1]), stop)
    # One background thread draws the permutation nulls while the variables' curves are
    # smoothed on every core (the compiled kernels and numpy's sorts release the GIL).
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="calibcore-permutations")
    curve_pool = ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, table.shape[1] or 1),
                                    thread_name_prefix="calibcore-curves")
    nulls = NullCache(pool, stop, tracker.permutation_drawn)
    try:
        # Compiling the kernels (seconds, once per process) is done in the background
        # while the variables are binned.
        compiled = pool.submit(compile_fit_only)
        pool.submit(compile_shuffle)
        prepared = []
        for position in range(table.shape[1]):
            prepared.append(_prepare_one(table.iloc[:, position], str(table.columns[position]),
                                         errors, settings, nulls, weights))
            tracker.prepared((position + 1) / table.shape[1])
        nulls.start()  # nulls of the same rows drawn together: one shuffle each permutation
        tracker.expect_nulls(nulls.n_nulls)
        wait_for(compiled, tracker)
        gaps = [curve_pool.submit(_gap_of, item, errors, settings, tracker, position)
                for position, item in enumerate(prepared)]
        rows = [_finish_one(item, wait_for(gap, tracker), tracker)
                for item, gap in zip(prepared, gaps, strict=True)]
    finally:
        # On a cancel or an error, do not wait for the threads: a draw in progress stops
        # at its next permutation (a compilation at its end), a curve at its next
        # progress step, queued ones never start.
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        curve_pool.shutdown(wait=False, cancel_futures=True)
    tracker.finished()
    ranking = pd.DataFrame(rows, columns=list(RANKING_COLUMNS))
    ranking = ranking.sort_values("vece", ascending=False, kind="mergesort", na_position="last")
    return ranking.reset_index(drop=True)


#: Share of a large variable's curve work taken by sorting it.
_SORT_SHARE = 0.1
#: Rows whose distinct values are counted first when deciding whether a numeric
#: variable is categorical.
_DISTINCT_PROBE = 1_000
#: Candidate points of the largest gap whose leverage is computed at once.
_LEVERAGE_BATCH = 8


@dataclass
class _Prepared:
    """A variable validated and binned, its row begun and its null (if any) submitted."""

    variable: Variable
    index: NDArray[np.intp]
    size: int
    row: dict[str, object]
    null: Future[NDArray[np.float64]] | None
    weights: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class _RankSettings:
    n_bins: int
    span: float
    n_points: int
    n_permutations: int
    max_categories: int
    random_state: int | None


def _prepare_one(
    column: pd.Series,
    name: str,
    errors: Errors,
    settings: _RankSettings,
    nulls: NullCache,
    all_weights: NDArray[np.float64] | None = None,
) -> _Prepared:
    """Validate and bin one variable, compute its VECE and submit its permutation null
    (weighted by ``all_weights``, the rows' weights, when given)."""
    variable = prepare_variable(column, errors.predicted.size, "auto", name)
    if variable.kind == "numeric" and _few_values(variable.values, settings.max_categories):
        variable = prepare_variable(column, errors.predicted.size, "categorical", name)
    row: dict[str, object] = {
        "variable": name,
        "kind": variable.kind,
        "vece": np.nan,
        "vce_max": np.nan,
        "v_star": np.nan,
        "p_value": np.nan,
        "n": int(variable.values.size),
        "n_missing": variable.n_missing,
    }
    weights = None if all_weights is None else all_weights[variable.used]
    if variable.values.size == 0 or (weights is not None and not (weights > 0).any()):
        return _Prepared(variable, np.empty(0, dtype=np.intp), 0, row, None)
    index, size = bin_index(variable, settings.n_bins, weights)
    residual = (errors.predicted - errors.actual)[variable.used]
    row["vece"] = binned_vece(index, size, residual, weights)
    null = None
    if settings.n_permutations > 0:
        null = _submit_null(variable, index, size, residual, weights, settings, nulls)
    return _Prepared(variable, index, size, row, null, weights)


def _submit_null(
    variable: Variable,
    index: NDArray[np.intp],
    size: int,
    residual: NDArray[np.float64],
    weights: NDArray[np.float64] | None,
    settings: _RankSettings,
    nulls: NullCache,
) -> Future[NDArray[np.float64]]:
    """Submit the permutation null of a binned variable: V permuted against its used rows,
    or with ``weights`` (the used rows') among the rows of positive weight (rows of weight
    0 are none of the weighted population), each keeping its residual and weight."""
    if weights is None:
        sizes = np.bincount(index, minlength=size)
        return nulls.submit(residual, variable.used, sizes[sizes > 0],
                            settings.n_permutations, settings.random_state)
    positive = weights > 0
    rows = variable.used.copy()
    rows[variable.used] = positive
    categorical = variable.kind == "categorical"
    sizes = np.bincount(index[positive], minlength=size)
    return nulls.submit_weighted(
        residual[positive], weights[positive], rows,
        None if categorical else np.sort(variable.values[positive]),
        sizes[sizes > 0] if categorical else None, settings.n_bins,
        settings.n_permutations, settings.random_state)


def _gap_of(
    item: _Prepared,
    errors: Errors,
    settings: _RankSettings,
    tracker: RankingProgress,
    position: int,
) -> tuple[float, object]:
    """VCE(v*) and v* of a prepared variable (NaN without rows); run on a worker thread."""
    def curves(fraction: float) -> None:
        tracker.curve(position, fraction)

    gap: tuple[float, object] = (np.nan, np.nan)
    if item.index.size:
        gap = _largest_gap(item.variable, errors, item.index, item.size, settings, curves,
                           item.weights)
    curves(1.0)
    return gap


def _few_values(values: NDArray[np.float64], most: int) -> bool:
    """Whether ``values`` hold at most ``most`` distinct numbers: decided by the first
    :data:`_DISTINCT_PROBE` rows when they already hold more (most numeric columns),
    without sorting every row."""
    if np.unique(values[:_DISTINCT_PROBE]).size > most:
        return False
    return bool(np.unique(values).size <= most)


def _finish_one(item: _Prepared, gap: tuple[float, object],
                tracker: RankingProgress) -> dict[str, object]:
    """The row of a prepared variable with its gap, and its p-value once its null is drawn."""
    row = dict(item.row)
    row["vce_max"], row["v_star"] = gap
    if item.null is not None:
        null = wait_for(item.null, tracker)
        row["p_value"] = permutation_p_value(float(row["vece"]), null)  # type: ignore[arg-type]
    return row


def _largest_gap(
    variable: Variable,
    errors: Errors,
    index: NDArray[np.intp],
    size: int,
    settings: _RankSettings,
    progress: Callable[[float], None],
    weights: NDArray[np.float64] | None = None,
) -> tuple[float, object]:
    """VCE(v*) and v*: from the LOESS curves (numeric) or over categories (weighted by
    ``weights``, the used rows', when given).

    Large numeric variables fit the gap alone: by linearity the difference of the
    error and predicted-error curves is the LOESS fit of ``error - predicted error``,
    and VCE(v*) needs no band (the bands' statistics would double the cost).
    """
    residual = (errors.predicted - errors.actual)[variable.used]
    if variable.kind == "categorical":
        # without weights the mass is the count of rows
        mass = np.bincount(index, weights=weights, minlength=size)
        weighted = residual if weights is None else weights * residual
        sums = np.abs(np.bincount(index, weights=weighted, minlength=size))
        gaps = np.divide(sums, mass, out=np.zeros(size), where=mass > 0)
        worst = int(np.argmax(gaps))
        return float(gaps[worst]), variable.categories[worst]
    values, used_weights = variable.values, weights
    if weights is not None:
        kept = weights > 0  # rows of weight 0 are no rows of the curves
        values, weights, residual = values[kept], relative_weights(weights[kept]), residual[kept]
    if not enough_neighbours(values.size, settings.span, weights, MIN_NEIGHBOURS):
        return np.nan, np.nan
    if variable.values.size <= N_EXACT:
        curves = variable_curves(
            variable, errors, settings.span, settings.n_points, 0.95, 1, settings.random_state,
            weights=used_weights
        )
        return curves.vce_max, curves.v_star
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    sorted_weights = None if weights is None else np.ascontiguousarray(weights[order])
    progress(_SORT_SHARE)
    x = curve_points(sorted_values, settings.n_points, weights=sorted_weights)
    gap = np.abs(loess_fit(sorted_values, np.ascontiguousarray(-residual[order]),
                           x, span=settings.span, progress=lambda fraction: progress(
                               _SORT_SHARE + (1.0 - _SORT_SHARE) * fraction),
                           sample_weight=sorted_weights))
    # the largest gap where the curves are drawn: never inside a wide gap of V
    # (row_support), and leverage only at the candidates, largest first (almost always the
    # first is drawn)
    supported, _ = row_support(sorted_values, x, settings.span, sorted_weights)
    ranked = np.flatnonzero(supported)[np.argsort(-gap[supported], kind="stable")]
    for start in range(0, ranked.size, _LEVERAGE_BATCH):
        candidates = ranked[start:start + _LEVERAGE_BATCH]
        drawn = loess_leverage(sorted_values, x[candidates], span=settings.span,
                               sample_weight=sorted_weights) <= MAX_LEVERAGE
        if drawn.any():
            worst = int(candidates[np.argmax(drawn)])
            return float(gap[worst]), float(x[worst])
    return np.nan, np.nan
