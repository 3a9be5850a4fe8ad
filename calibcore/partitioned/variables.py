"""Variable-based calibration of a partitioned table on Dask (Kelly & Smyth 2023).

:func:`partitioned_variables` gives, for every feature of a ``dask.dataframe.DataFrame``,
what :func:`calibcore.variable.rank_variables` gives on all its rows (bar the
permutation p-value): the kind, VECE, ``vce_max`` and ``v_star``, and for a numeric
variable the LOESS curves of :func:`calibcore.variable.loess_curves`. Only summaries
leave the partitions (:mod:`calibcore.partitioned._variable_summaries`), in three Dask passes for
all features together, each reading every partition once:

1. *scan*: rows and missing rows, sums per distinct value (a categorical variable's VECE
   is complete here), and the coarse cells of the numeric values. A numeric column is
   categorical, as in ``rank_variables``, when it has at most ``max_categories`` distinct
   finite values; partitions keep their values' sums only up to ``max_categories + 2``
   values (with room for +/-inf, a category of its own there).
2. *counts*: each numeric variable's values per cell of a monotone map onto about 2^16
   cells of equal mass (:class:`calibcore.partitioned.FloatCells`), with each cell's
   smallest and largest value.
3. *values*: the distinct values of the few cells holding the order statistics that
   numpy's quantiles read (the equal-mass edges, the 5th and 95th percentiles) or that
   could hold an edge of the histogram under the curves, with their sums; the sums of
   the runs of cells between them; the LOESS groups' sums.

The runs of cells between target cells lie between consecutive order statistics or
wholly on one side of every edge, so each falls in one bin
(:mod:`calibcore.partitioned._numeric_variables`): the edges are
``pandas.qcut(v, n_bins, duplicates="drop")``'s edges of all rows bit for bit (pandas
gives its own quantile levels, see :func:`qcut_levels`), the bins the same, and VECE
equals :func:`calibcore.variable.variable_ece` with the same kind up to the order of
summation (about 1e-15). The curves' points are exact, and so is the histogram under
them unless the cells around its edges would send more than
:data:`MAX_HISTOGRAM_VALUES` values (``histogram_exact`` says which); the fits,
bands and ``vce_max`` are within :data:`calibcore.partitioned._binned_loess.LOESS_BOUND` of the
in-memory ones (exactly equal for variables of at most
:data:`calibcore.variable.N_EXACT` rows, whose rows are gathered and smoothed in memory).

Row weights (``weight=``, a column, and ``negative_rate=``, as
:func:`calibcore.partitioned.partitioned_summaries` takes them) make it the ranking of
``rank_variables(..., sample_weight=)``: every sum is weighted and carries the weight,
the bins are at the weighted quantiles (:mod:`calibcore.partitioned._weighted_numeric`;
integer weights: those of the rows repeated by their weights, bit for bit), VECE is
``sum_b |W_b (predicted error_b - error_b)| / W`` as in memory, and the LOESS windows
hold a share ``span`` of the weight (the cells' and groups' weight in place of their
rows).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.exceptions import CalibrationInputError
from calibcore.partitioned._binned_loess import LOESS_BOUND
from calibcore.partitioned._dask_progress import compute_reporting, within
from calibcore.partitioned._numeric_variables import (
    MAX_HISTOGRAM_VALUES,
    VariableSettings,
    Weights,
    collect_plan,
    finish_numeric,
    qcut_levels,
)
from calibcore.partitioned._variable_checks import _checked_features, _checked_settings, _spec
from calibcore.partitioned._variable_summaries import (
    STATISTICS,
    CellCounts,
    CollectPlan,
    FeatureScan,
    FeatureSpec,
    FeatureValues,
    collect_partition,
    count_partition,
    merge_collected,
    merge_counts,
    merge_scans,
    scan_partition,
)
from calibcore.partitioned.exact_quantiles import CELLS, FloatCells
from calibcore.partitioned.measures import _tree
from calibcore.partitioned.partitions import checked_weighting, each_partition
from calibcore.partitioned.weighting import Weighting, checked_negative_rate
from calibcore.variable._binning import _factorize
from calibcore.variable.ranking import RANKING_COLUMNS
from calibcore.variable.vece import LoessCurves

if TYPE_CHECKING:
    import dask.dataframe as dd

#: Cells of a numeric variable counted in the second pass (about; a power of two).
N_CELLS = CELLS


@dataclass(frozen=True)
class PartitionedVariable:
    """Variable-based calibration of one feature over every partition.

    Attributes
    ----------
    variable : str
    kind : {"numeric", "categorical"}
        As :func:`calibcore.variable.rank_variables` decides it.
    n, n_missing : int
        Rows used and rows left out (missing; for a numeric variable also +/-inf).
    vece : float
        :func:`calibcore.variable.variable_ece` with this kind (NaN without rows).
    vce_max : float
        Largest gap between the LOESS curves where they are drawn (numeric: never
        inside a wide gap of V, see :class:`calibcore.variable.LoessCurves`) or largest
        ``|error - predicted error|`` over categories; NaN when undefined.
    v_star : object
        Where ``vce_max`` occurs: a value of V, or the category.
    edges : ndarray of float64
        The equal-mass bin edges (numeric; ``pandas.qcut`` with duplicates dropped,
        ``[v, v]`` for a constant V); empty for a categorical variable.
    categories : ndarray of object
        The categories, sorted (categorical); empty for a numeric variable.
    bin_sums : ndarray of shape (n_bins_or_categories, 4), or 5 columns when weighted
        Per bin (or category): rows, errors, predicted errors and squared predicted
        errors summed (:data:`calibcore.partitioned.STATISTICS`); weighted: rows, the
        weighted sums and the weight (``WEIGHTED_STATISTICS``).
    curves : LoessCurves or None
        The LOESS curves (numeric, with at least ``floor(n * span) >= 4`` rows).
    histogram_exact : bool
        Whether ``curves.histogram_counts`` are exact (see :data:`MAX_HISTOGRAM_VALUES`).
    """

    variable: str
    kind: Literal["numeric", "categorical"]
    n: int
    n_missing: int
    vece: float
    vce_max: float
    v_star: object
    edges: NDArray[np.float64]
    categories: NDArray[np.object_]
    bin_sums: NDArray[np.float64]
    curves: LoessCurves | None
    histogram_exact: bool


@dataclass(frozen=True)
class PartitionedVariables:
    """Variable-based calibration of every feature (:func:`partitioned_variables`).

    Attributes
    ----------
    variables : tuple of PartitionedVariable
        In the order of the features.
    n_rows : int
    n_bins, max_categories, span, n_points
        The parameters used.
    loess_bound : float
        Stated bound on the curves' difference from the in-memory ones.
    """

    variables: tuple[PartitionedVariable, ...]
    n_rows: int
    n_bins: int
    max_categories: int
    span: float
    n_points: int
    loess_bound: float
    weighted: bool = False

    def __getitem__(self, name: str) -> PartitionedVariable:
        for variable in self.variables:
            if variable.variable == name:
                return variable
        raise KeyError(name)

    def ranking(self) -> pd.DataFrame:
        """The table of :func:`calibcore.variable.rank_variables` (``p_value`` NaN: no
        permutation test), sorted by ``vece`` descending."""
        rows = [{"variable": v.variable, "kind": v.kind, "vece": v.vece, "vce_max": v.vce_max,
                 "v_star": v.v_star, "p_value": np.nan, "n": v.n, "n_missing": v.n_missing}
                for v in self.variables]
        table = pd.DataFrame(rows, columns=list(RANKING_COLUMNS))
        table = table.sort_values("vece", ascending=False, kind="mergesort", na_position="last")
        return table.reset_index(drop=True)


def partitioned_variables(
    frame: dd.DataFrame,
    label: str,
    probabilities: Sequence[str],
    classes: Sequence[Any] | None = None,
    features: Sequence[str] | None = None,
    *,
    n_bins: int = 10,
    max_categories: int = 10,
    span: float = 0.8,
    n_points: int = 500,
    confidence_level: float = 0.95,
    n_histogram_bins: int = 30,
    random_state: int | None = 0,
    curves: bool = True,
    progress: Callable[[float], None] | None = None,
    weight: str | None = None,
    negative_rate: float | None = None,
) -> PartitionedVariables:
    """VECE, kind, VCE(v*) and LOESS curves of every feature of a Dask table.

    Three Dask passes (one computation each, over delayed per-partition summaries merged
    pairwise), the last two only when there are numeric variables.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
    label : str
        The label column.
    probabilities : sequence of str
        One probability column per class, or one holding P(positive).
    classes : sequence, optional
        The class of each probability column (found from the labels when not given, in
        one more pass over the label column; see :mod:`calibcore.partitioned`).
    features : sequence of str, optional
        The variables; by default every other column.
    n_bins, max_categories, span, n_points
        As in :func:`calibcore.variable.rank_variables`.
    confidence_level, n_histogram_bins, random_state
        As in :func:`calibcore.variable.loess_curves`.
    curves : bool, default=True
        False skips the LOESS curves (``vce_max`` and ``v_star`` of numeric variables
        are then NaN): VECE alone costs less in the last pass and on the client.
    progress : callable, optional
        ``progress(fraction)``, called as each partition of each pass is done (a third
        of the fraction a pass; without numeric variables the scan is the last); it may
        raise to stop the pass (what is left of it is cancelled).
    weight : str, optional
        A column of non-negative row weights (not a feature).
    negative_rate : float, optional
        Two classes: the negatives weigh 1 / rate (times ``weight``).

    Returns
    -------
    PartitionedVariables
    """
    import dask

    settings = _checked_settings(n_bins, max_categories, span, n_points, confidence_level,
                                 n_histogram_bins, random_state, curves)
    classes, columns, weighting = checked_weighting(frame, label, probabilities, classes,
                                                    weight, negative_rate)
    names = _checked_features(frame.columns, label, [*columns, *weighting.columns], features)
    parts = frame[[label, *columns, *weighting.columns, *names]].to_delayed()

    def reduce(function: Any, merge: Any, plan: Any) -> Any:
        # the plan is one task of the graph, not a copy inside every partition's task
        extra = (weighting,) if weighting.weighted else ()
        leaves = each_partition(parts, function, label, columns, classes,
                                dask.delayed(plan), *extra)
        index = (scan_partition, count_partition, collect_partition).index(function)
        (merged,) = compute_reporting([_tree(merge, leaves)], leaves,
                                      within(progress, index / 3, (index + 1) / 3))
        return merged

    return _diagnose(reduce, names, [frame[name].dtype for name in names], settings,
                     weighting.weighted)


def variables_of_parts(
    parts: Sequence[pd.DataFrame],
    label: str,
    probabilities: Sequence[str],
    classes: Sequence[Any],
    features: Sequence[str] | None = None,
    *,
    n_bins: int = 10,
    max_categories: int = 10,
    span: float = 0.8,
    n_points: int = 500,
    confidence_level: float = 0.95,
    n_histogram_bins: int = 30,
    random_state: int | None = 0,
    curves: bool = True,
    weight: str | None = None,
    negative_rate: float | None = None,
) -> PartitionedVariables:
    """:func:`partitioned_variables` of pandas parts of a table, in this process.

    The same summaries and merges without Dask: what each Dask task computes. Parameters
    as in :func:`partitioned_variables` (``classes`` is needed); the parts share their
    columns and dtypes (those of the first part decide each feature's dtype).
    """
    settings = _checked_settings(n_bins, max_categories, span, n_points, confidence_level,
                                 n_histogram_bins, random_state, curves)
    if not parts:
        raise CalibrationInputError("there are no parts to summarize.")
    columns, classes = list(probabilities), [str(c) for c in classes]
    weighting = Weighting(weight, checked_negative_rate(negative_rate, classes))
    names = _checked_features(parts[0].columns, label, [*columns, *weighting.columns],
                              features)
    extra = (weighting,) if weighting.weighted else ()

    def reduce(function: Any, merge: Any, plan: Any) -> Any:
        return functools.reduce(merge, [function(part, label, columns, classes, plan, *extra)
                                        for part in parts])

    return _diagnose(reduce, names, [parts[0][name].dtype for name in names], settings,
                     weighting.weighted)


def _diagnose(reduce: Any, names: list[str], dtypes: list[Any],
              settings: VariableSettings, weighted: bool = False) -> PartitionedVariables:
    """The three passes, each ``reduce(partition function, merge, plan)``, and the
    results from the merged summaries."""
    specs = [_spec(name, dtype, settings.max_categories) for name, dtype in zip(
        names, dtypes, strict=True)]
    scans: list[FeatureScan] = reduce(scan_partition, merge_scans, specs)
    kinds = [_kind(spec, scan, settings.max_categories) for spec, scan in zip(specs, scans,
                                                                               strict=True)]
    numeric = [i for i, kind in enumerate(kinds) if kind == "numeric" and scans[i].n_finite]
    weights = {i: Weights(scans[i].integral_weights, scans[i].n_positive) if weighted else None
               for i in numeric}
    cells = {i: _cells(scans[i]) for i in numeric}
    counts: list[CellCounts] = []
    collected: list[FeatureValues] = []
    plans: dict[int, CollectPlan] = {}
    if numeric:
        counts = reduce(count_partition, merge_counts, [(names[i], cells[i]) for i in numeric])
        plans = {i: collect_plan(cells[i], count, scans[i].n_finite, settings, weights[i])
                 for i, count in zip(numeric, counts, strict=True)}
        collected = reduce(collect_partition, merge_collected,
                           [(names[i], plans[i]) for i in numeric])
    finished = {i: _numeric(names[i], scans[i], plans[i], count, values, settings, weights[i])
                for i, count, values in zip(numeric, counts, collected, strict=True)}
    results = tuple(finished[i] if i in finished else _other(names[i], kinds[i], scans[i])
                    for i in range(len(names)))
    return PartitionedVariables(results, scans[0].n_rows if scans else 0, settings.n_bins,
                                settings.max_categories, settings.span, settings.n_points,
                                LOESS_BOUND, weighted)


def _kind(spec: FeatureSpec, scan: FeatureScan,
          max_categories: int) -> Literal["numeric", "categorical"]:
    if not spec.numeric:
        return "categorical"
    if scan.values is None:
        return "numeric"
    finite = np.isfinite(scan.values.index.to_numpy(dtype=np.float64))
    return "categorical" if int(finite.sum()) <= max_categories else "numeric"


def _other(name: str, kind: Literal["numeric", "categorical"],
           scan: FeatureScan) -> PartitionedVariable:
    """A categorical variable (complete after the scan), or a numeric one without rows."""
    empty_edges, empty_categories = np.empty(0), np.empty(0, dtype=object)
    if kind == "numeric" or scan.values is None:
        return PartitionedVariable(name, kind, 0, scan.n_rows, np.nan, np.nan, np.nan,
                                   empty_edges, empty_categories, np.empty((0, 4)), None, True)
    _, categories = _factorize(pd.Series(scan.values.index))
    # positions, not .loc: an index of booleans would be read as a mask
    positions = scan.values.index.get_indexer(pd.Index(categories, dtype=object))
    sums = scan.values.to_numpy(dtype=np.float64)[positions]
    n = int(sums[:, 0].sum())
    # weighted: each category's weight in place of its rows (the sums are weighted)
    mass = sums[:, 4] if sums.shape[1] > 4 else sums[:, 0]
    if n == 0 or not mass.sum() > 0:
        return PartitionedVariable(name, kind, n, scan.n_missing, np.nan, np.nan, np.nan,
                                   empty_edges, categories, sums, None, True)
    gaps = np.abs(sums[:, 2] - sums[:, 1]) / np.where(mass > 0, mass, 1.0)
    if sums.shape[1] > 4:
        gaps = np.where(mass > 0, gaps, -np.inf)  # a category of weight 0 has no mean
    worst = int(np.argmax(gaps))
    return PartitionedVariable(name, kind, n, scan.n_missing,
                               float(np.abs(sums[:, 2] - sums[:, 1]).sum() / mass.sum()),
                               float(gaps[worst]), categories[worst], empty_edges, categories,
                               sums, None, True)


def _cells(scan: FeatureScan) -> FloatCells:
    coarse, counts = scan.coarse if scan.coarse is not None else (np.empty(0), np.empty(0))
    return FloatCells.of(coarse.astype(np.int64), counts.astype(np.int64),
                         int(scan.min_key or 0), int(scan.max_key or 0), N_CELLS)


def _numeric(name: str, scan: FeatureScan, plan: CollectPlan, counted: CellCounts,
             values: FeatureValues, settings: VariableSettings,
             weights: Weights | None = None) -> PartitionedVariable:
    n_missing = scan.n_rows - scan.n_finite
    result = finish_numeric(plan, counted, values, n_missing, settings, scan.integral,
                            weights)
    curves = result.curves
    return PartitionedVariable(
        name, "numeric", scan.n_finite, n_missing, result.vece,
        curves.vce_max if curves is not None else np.nan,
        curves.v_star if curves is not None else np.nan, result.edges,
        np.empty(0, dtype=object), result.bin_sums, curves, result.histogram_exact)


__all__ = ["MAX_HISTOGRAM_VALUES", "STATISTICS", "PartitionedVariable", "PartitionedVariables",
           "partitioned_variables", "qcut_levels", "variables_of_parts"]
