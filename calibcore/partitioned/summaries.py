"""Mergeable summaries of prediction rows: the views they serve, and the resampling cells.

A partitioned table is reduced partition by partition to summaries whose merge is the
summary of all the rows, so only summaries travel and the measures read off the merged
ones are those of all the rows, on any partitioning: the bin sums of a
:class:`calibcore.partitioned.BinnedSummary` (the binned measures, exactly;
:mod:`calibcore.partitioned.binned_summaries`), the rows at each distinct score of a
:class:`calibcore.partitioned.ScoreSummary` (the bin-free measures, exactly;
:mod:`calibcore.partitioned.score_summaries`) and, here, the bootstrap's resampling
cells of a :class:`CellSummary` (the intervals).

Every summary serves two views (:mod:`calibcore.data.views`): the top-label one
(confidence against correctness) and, for two classes, the positive one (P(class 1)
against 1[y = 1]), which is class 1's problem of the classwise sums. A
:class:`ScoreSummary` holds one view's distinct scores (``view=``); the cells of a
:class:`CellSummary` do not depend on the view, and it keeps the quantities of both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.data.views import View
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics._resampling import ResamplingPlan, cell_columns, row_cell_keys
from calibcore.metrics._weighted_measures import MeasureName, WeightedMeasures, row_losses
from calibcore.metrics.consistent import view_problems
from calibcore.metrics.reliability import (
    SmoothReliability,
    smooth_reliability_of_groups,
)
from calibcore.metrics.uncertainty import (
    GlobalMeasures,
    IntervalMethod,
    measure_estimates,
    resample,
)
from calibcore.partitioned.weighting import row_weights

#: The views a summary serves, and the label of each one's problem (as
#: :func:`calibcore.data.score_outcome` names it).
VIEW_LABELS: dict[str, str] = {"top_label": "top label", "positive": "class 1"}
#: Where a cell summary keeps each view's problem: the top label's, or class 1's (P(class
#: 1) against 1[y = 1] is the positive view's problem).
_VIEW_COLUMNS: dict[str, str] = {"top_label": "view:0", "positive": "classwise:1"}


def check_summary_view(view: str, n_classes: int) -> None:
    """Refuse a view the summaries do not serve: classwise (its bin-free measures would
    need every class's distinct probabilities), or positive with more than two classes."""
    if view not in VIEW_LABELS:
        raise CalibrationInputError(
            f"the partitioned summaries serve the top_label and positive views, not "
            f"{view!r}.", code="unsupported_view")
    if view == "positive" and n_classes != 2:
        raise CalibrationInputError(
            f"the 'positive' view needs a binary problem; this one has {n_classes} classes. "
            "Use view='top_label'.", code="unsupported_view")


def empty_classes(y_true: ArrayLike, y_prob: ArrayLike) -> int | None:
    """The classes of the summary of no rows (an empty partition): those of ``y_prob``,
    two when it is 1-D; None when there are rows.

    Examples
    --------
    >>> empty_classes([], np.empty((0, 3))), empty_classes([], []), empty_classes([1], [0.4])
    (3, 2, None)
    """
    shape = np.shape(y_prob)
    if len(shape) in (1, 2) and shape[0] == 0 and np.size(y_true) == 0:
        return 2 if len(shape) == 1 else int(shape[1])
    return None


#: The bin-free measures :meth:`CellSummary.measures` computes on the cells.
FROM_CELLS: tuple[MeasureName, ...] = ("interval_calibration_error",
                                       "laplace_kernel_calibration_error", "smooth_ece")
#: How far from the exact value the tests allow those (observed: intCE 6e-5, smooth
#: ECE 2e-7, kCE 2e-8 on binary and multiclass families of 50k-300k rows).
CELL_ERROR_BOUND = 1e-4


@dataclass(frozen=True, eq=False)
class CellSummary:
    """Rows grouped into the bootstrap's resampling cells, with the sums of every per-row
    quantity the measures need: mergeable, and what the intervals resample.

    The cells are those of the in-memory bootstrap above 20,000 rows
    (:func:`calibcore.metrics._resampling.row_cells`: the same label, top-label bin and, for
    every class, the same sub-cell of width about 1/8192), so a merged summary holds the
    cells of all the rows, in the same order. :meth:`measures` resamples them as the
    in-memory bootstrap does, with the same draws for the same seed: the intervals equal
    :func:`calibcore.metrics.global_measures`' on the same rows whenever it
    resamples through cells, on any partitioning, and cost O(cells) per resample.

    Attributes
    ----------
    n_rows : int
    n_bins : int
    sums : pandas.DataFrame
        One row per non-empty cell, indexed by the cell's coordinates (sorted): the
        rows in it (``"rows"``) and the sums of
        :meth:`calibcore.metrics._weighted_measures.WeightedMeasures.quantities`.
    """

    n_rows: int
    n_bins: int
    sums: pd.DataFrame

    @classmethod
    def of(cls, y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15,
           sample_weight: ArrayLike | None = None) -> CellSummary:
        """The cells of these rows, with the quantities of the top-label view and of every
        class (the positive view's are class 1's); no rows give the empty summary.
        ``sample_weight`` (row weights) adds each cell's weight (``"weight"``) and sum
        of squared weights (``"weight2"``), and its quantities are weighted sums."""
        n_bins = check_positive_int(n_bins, "n_bins")
        if (n_classes := empty_classes(y_true, y_prob)) is not None:
            return cls.empty(n_classes, n_bins, weighted=sample_weight is not None)
        labels, proba = check_predictions(y_true, y_prob)
        weights = row_weights(sample_weight, labels.size)
        key, sizes = row_cell_keys(labels, proba, n_bins)
        # the quantities in row order: the top-label problem unsorted (of_rows sorts it
        # for the bin-free measures, and quantities() would put it back in row order)
        quantities = WeightedMeasures(
            row_losses(labels, proba), view_problems(labels, proba, "top_label", sort=False),
            view_problems(labels, proba, "classwise", sort=False), n_bins,
            "equal_width").quantities()
        # each row's sums, beside its count ("rows")
        per_row = (dict(quantities) if weights is None else
                   {"weight": weights, "weight2": np.square(weights),
                    **{name: values * weights for name, values in quantities.items()}})
        names = _coordinates(proba.shape[1])
        if key is None:  # the coordinates do not fit one int64 key
            columns, _ = cell_columns(labels, proba, n_bins)
            frame = pd.DataFrame({"rows": np.ones(labels.size), **per_row},
                                 index=pd.MultiIndex.from_arrays(columns, names=names))
            return cls(int(labels.size), n_bins, frame.groupby(level=names, sort=True).sum())
        # one int64 key per row, in the lexicographic order of the coordinates: the same
        # groups in the same order as grouping by the coordinates; each column summed per
        # group in row order (np.bincount, as the in-memory cells are), without a frame
        # of every row (a group-by of that frame was a fifth of a Dask report's summaries)
        groups, distinct = pd.factorize(key, sort=True)
        sums = {"rows": np.bincount(groups, minlength=distinct.size).astype(np.float64),
                **{name: np.bincount(groups, weights=values, minlength=distinct.size)
                   for name, values in per_row.items()}}
        index = pd.MultiIndex.from_arrays(list(np.unravel_index(distinct, sizes)), names=names)
        return cls(int(labels.size), n_bins, pd.DataFrame(sums, index=index))

    @classmethod
    def empty(cls, n_classes: int, n_bins: int = 15, *, weighted: bool = False) -> CellSummary:
        """The summary of no rows (the identity of :meth:`merge`), weighted or not."""
        names = ["rows", *(_WEIGHT_SUMS if weighted else ()),
                 *_template(n_classes, n_bins).quantities()]
        index = pd.MultiIndex.from_arrays([np.empty(0, np.int64)] * (n_classes + 2),
                                          names=_coordinates(n_classes))
        return cls(0, n_bins, pd.DataFrame(np.empty((0, len(names))), index=index,
                                           columns=names))

    def merge(self, other: CellSummary) -> CellSummary:
        """The summary of both sets of rows."""
        if (other.n_bins, list(other.sums.columns)) != (self.n_bins, list(self.sums.columns)):
            raise CalibrationInputError("cell summaries of different classes or bins "
                                        "cannot merge.")
        sums = pd.concat([self.sums, other.sums])
        return CellSummary(self.n_rows + other.n_rows, self.n_bins,
                           sums.groupby(level=list(sums.index.names), sort=True).sum())

    @property
    def n_classes(self) -> int:
        return int(self.sums.index.nlevels - 2)

    @property
    def weighted(self) -> bool:
        return "weight" in self.sums.columns

    def _means(self) -> tuple[NDArray[np.float64], dict[str, NDArray[np.float64]],
                              NDArray[np.float64] | None]:
        """Rows per cell, each quantity's (weighted) mean per cell and, when weighted,
        each cell's mean weight (a cell of weight zero gets means of zero: it weighs
        nothing in any measure or resample)."""
        counts = self.sums["rows"].to_numpy()
        if counts.size == 0:
            raise CalibrationInputError("no rows were summarized.")
        names = [name for name in self.sums.columns if name not in ("rows", *_WEIGHT_SUMS)]
        if not self.weighted:
            return counts, {name: self.sums[name].to_numpy() / counts for name in names}, None
        mass = self.sums["weight"].to_numpy()
        means = {name: np.divide(self.sums[name].to_numpy(), mass,
                                 out=np.zeros(mass.size), where=mass > 0) for name in names}
        return counts, means, mass / counts

    def smooth_diagram(self, *, view: View = "top_label", n_bootstrap: int = 200,
                       random_state: int = 0) -> SmoothReliability:
        """``view``'s smooth reliability diagram (top label, or class 1 for the positive
        view), each cell's rows at their mean score (moved by less than one sub-cell,
        1/8,190 at 15 bins): within :data:`CELL_ERROR_BOUND` of
        :func:`calibcore.metrics.smooth_reliability` on the rows in the tests
        (:func:`calibcore.metrics.smooth_reliability_of_groups`).
        """
        check_summary_view(view, self.n_classes)
        counts, means, unit = self._means()
        column = _VIEW_COLUMNS[view]
        scores = means[f"{column}:score"]
        rates = scores - means[f"{column}:residual"]
        return smooth_reliability_of_groups(np.clip(scores, 0.0, 1.0), np.clip(rates, 0.0, 1.0),
                                            counts, label=VIEW_LABELS[view],
                                            n_bootstrap=n_bootstrap, random_state=random_state,
                                            sample_weight=unit)

    def measures(self, values: dict[MeasureName, float], keys: Sequence[MeasureName], *,
                 view: View = "top_label", n_bootstrap: int = 200,
                 confidence_level: float = 0.95, random_state: int = 0,
                 interval: IntervalMethod = "hybrid") -> GlobalMeasures:
        """The measures ``keys`` of ``view`` (equal-width bins) with intervals: the exact
        plug-in ``values`` (e.g. :meth:`BinnedSummary.measures` of the same view) and the
        resamples of the cells, drawn as :func:`calibcore.metrics.global_measures` draws
        them in that view.

        Keys among :data:`FROM_CELLS` without a value are computed on the cells, every
        row's scores moved to its cell's mean (by less than one sub-cell, 1/8,190 at
        15 bins), and say so in their note; the tests hold them within
        :data:`CELL_ERROR_BOUND` of the exact value.
        """
        n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=0)
        level = check_in_range(confidence_level, "confidence_level", low=0, high=1,
                               inclusive=False)
        n_classes = self.n_classes
        check_summary_view(view, n_classes)
        counts, means, unit = self._means()
        for part in ("score", "residual"):  # the view's problem: the top label's, or class 1's
            means[f"view:0:{part}"] = means[f"{_VIEW_COLUMNS[view]}:{part}"]
        cells = _template(n_classes, self.n_bins, view).with_quantities(means)
        mass = counts if unit is None else counts * unit
        approximate = [key for key in keys if key in FROM_CELLS and key not in values]
        values = {**values, **{key: float(value[0]) for key, value in cells.rows(
            approximate, mass[None, :], True).items() if key in approximate}}
        known = [key for key in keys if key in values]
        samples: dict[MeasureName, list[NDArray[np.float64]]] = {key: [] for key in known}
        plan = ResamplingPlan("cells", self.n_rows, None, counts)
        if unit is not None:  # as calibcore.metrics._resampling.resampling_plan weighs cells
            squares = self.sums["weight2"].to_numpy()
            spread = np.sqrt(np.maximum(squares / counts - np.square(unit), 0.0))
            same = bool(np.all(spread <= 1e-12 * np.maximum(unit, 1e-300)))
            plan = replace(plan, unit_weights=unit, unit_spread=None if same else spread)
        base = {key: value for key, value in cells.rows(known, mass[None, :], True).items()
                if key in samples}
        resample(plan, cells, base, {key: np.array([values[key]]) for key in known}, known,
                 samples, n_bootstrap, random_state)
        estimates = measure_estimates(keys, {key: values[key] for key in known}, samples,
                                      level, interval, missing="", unresampled=None)
        cell_note = (f"computed on the {counts.size:,} resampling cells (scores moved by less "
                     f"than one sub-cell; within {CELL_ERROR_BOUND:g} of the exact value in "
                     "the tests)")
        estimates = tuple(replace(e, note=cell_note) if e.key in approximate else e
                          for e in estimates)
        n_eff = None
        if unit is not None:
            total, squares_total = mass.sum(), self.sums["weight2"].to_numpy().sum()
            n_eff = float(total ** 2 / squares_total) if squares_total > 0 else 0.0
        return GlobalMeasures(estimates, view, self.n_rows, n_classes, self.n_bins,
                              "equal_width", n_bootstrap, level,
                              plan.note if n_bootstrap else "", n_eff)


#: The columns a weighted cell summary adds after ``"rows"``: the cell's weight and sum of
#: squared weights.
_WEIGHT_SUMS = ("weight", "weight2")


def _coordinates(n_classes: int) -> list[str]:
    return ["label", "bin", *(f"cell_{k}" for k in range(n_classes))]


def _template(n_classes: int, n_bins: int, view: View = "top_label") -> WeightedMeasures:
    """``view``'s problems of ``n_classes`` classes (their labels and sorting), from one
    row: :meth:`WeightedMeasures.with_quantities` puts any rows in them."""
    return WeightedMeasures.of_rows(np.zeros(1, dtype=np.intp),
                                    np.full((1, n_classes), 1.0 / n_classes), view,
                                    n_bins, "equal_width")


__all__ = ["CELL_ERROR_BOUND", "FROM_CELLS", "VIEW_LABELS", "CellSummary", "check_summary_view",
           "empty_classes"]
