"""How the bootstrap of :func:`calibcore.metrics.global_measures` draws its resamples.

A resample is a row of count weights, ``w_i`` = times row i was drawn. Evaluating
every measure on (b, n) weights costs O(b n), about 2 s per resample of 1.5M rows,
so above :data:`ROW_BOOTSTRAP_MAX_ROWS` rows the resampling is done on a summary:

``"cells"``
    Rows are grouped into cells of the fine grid :func:`row_cells` defines (the same
    label, top-label bin and, for each class, the same sub-cell of width about
    1/8192 of its probability). A row resample only enters the measures through how
    many rows of each cell it draws, and those counts follow the multinomial that
    row resampling induces, so they are drawn exactly; the rows of a cell then share
    the cell's mean score, which moves no score by more than a cell width, and the
    resampled measures by about as much (ECE bins and equal-width binned measures
    are not moved at all: cells never straddle a bin edge). Used when the cells are
    at most half as many as the rows (always for binary problems of more than about
    70k rows). The smooth reliability diagram's band is drawn the same way.
``"subsample"``
    Otherwise (many classes whose probability vectors are all distinct) an
    m-out-of-n bootstrap: rows of a seeded uniform subsample of
    :data:`SUBSAMPLE_ROWS` are resampled and each resample's deviation from the
    subsample's value is scaled by sqrt(m / n), the rate at which the sampling
    spread of these measures shrinks (Bickel, Götze & van Zwet 1997).
``"rows"``
    Up to :data:`ROW_BOOTSTRAP_MAX_ROWS` rows, rows are resampled as they are.

With row weights (``sample_weight``), a resample draws rows as above and each drawn row
carries its weight: the resample's weights are counts times sample weights. A cell's
rows share its label and (within a cell width) its scores, so a resample enters the
measures only through the total weight it draws from each cell: the sum of ``c``
weights drawn from the cell's rows when it draws ``c`` of them, drawn as ``c`` times
their mean plus a normal deviation of variance ``c`` times their variance (the sum's
first two moments exactly; exact outright when a cell's weights are equal, as the
weights of negative downsampling, one per label, are).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.data.views import top_class
from calibcore.metrics._cell_keys import cell_keys
from calibcore.metrics.binning import assign_bins, equal_width_edges

#: Resamples are drawn in blocks of about this many weights (bounds memory).
BLOCK_ELEMENTS = 1 << 22
#: Up to this many rows, rows themselves are resampled.
ROW_BOOTSTRAP_MAX_ROWS = 20_000
#: Sub-cells of the probability axis, over all bins (cell width about 1.2e-4).
GRID_CELLS = 8_192
#: Most resamples of one block when resampling cells.
CELL_BLOCK_RESAMPLES = 20
#: Rows of the m-out-of-n subsample.
SUBSAMPLE_ROWS = 20_000
#: Rows probed for distinct cells before grouping them all (many classes).
PROBE_ROWS = 10_000
#: Row weights of at most this many distinct values group the calibration test's rows
#: by weight (:mod:`calibcore.metrics.calibration_test`).
WEIGHT_LEVELS = 64

ResamplingMethod = Literal["rows", "cells", "subsample"]

_Block = TypeVar("_Block")


def resample_counts(rng: np.random.Generator, n: int, size: int) -> NDArray[np.float64]:
    """``size`` bootstrap resamples of n rows as count weights, shape (size, n)."""
    draws = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)


def resample_blocks(
    n: int, n_resamples: int, random_state: int | np.random.Generator | None
) -> Iterator[NDArray[np.float64]]:
    """``n_resamples`` bootstrap resamples as count weights, in blocks of bounded size
    (generated lazily, so memory stays at one block)."""
    rng = np.random.default_rng(random_state)
    block = max(1, BLOCK_ELEMENTS // n)
    for start in range(0, n_resamples, block):
        yield resample_counts(rng, n, min(block, n_resamples - start))


def drawn_ahead(blocks: Iterator[_Block]) -> Generator[_Block, None, None]:
    """The items of ``blocks``, each drawn on a thread of its own while the caller works
    on the one before (NumPy's multinomial and binomial draws release the GIL).

    The items are drawn one after the other, in order, from the one iterator, so a
    seeded stream gives the very same draws as iterating ``blocks`` directly. A caller
    that stops early (a cancelled bootstrap) waits for at most the one block under way.
    """
    with ThreadPoolExecutor(1, thread_name_prefix="draws") as pool:
        pending = pool.submit(next, blocks, None)
        while True:
            block = pending.result()
            if block is None:
                return
            pending = pool.submit(next, blocks, None)
            yield block


@dataclass(frozen=True)
class ResamplingPlan:
    """How resamples are drawn (see the module docstring).

    Attributes
    ----------
    method : {"rows", "cells", "subsample"}
    n_rows : int
        Rows of the data.
    groups : ndarray of shape (n_rows,) or (m,), or None
        ``"cells"``: the cell of each row; ``"subsample"``: the rows of the
        subsample; ``"rows"``: None.
    counts : ndarray of shape (n_cells,) or None
        ``"cells"``: rows per cell.
    scale : float
        Factor of each resample's deviation (sqrt(m / n) for ``"subsample"``, else 1).
    unit_weights : ndarray or None
        With row weights: the weight each drawn row, subsample row or cell row carries
        (the cell's mean weight), multiplying the counts of every resample; None for
        unweighted rows.
    unit_spread : ndarray or None
        ``"cells"`` with row weights: the standard deviation of each cell's weights
        (module docstring); None when they are all equal.
    """

    method: ResamplingMethod
    n_rows: int
    groups: NDArray[np.intp] | None = None
    counts: NDArray[np.float64] | None = None
    scale: float = 1.0
    unit_weights: NDArray[np.float64] | None = None
    unit_spread: NDArray[np.float64] | None = None

    @property
    def note(self) -> str:
        """One line saying how the resamples were drawn."""
        weighted = ""
        if self.unit_weights is not None:
            weighted = ("; each drawn row carries its weight" if self.unit_spread is None
                        else "; each drawn row carries its weight (a cell's drawn weight: "
                        "its mean and variance exact)")
        if self.method == "cells" and self.counts is not None:
            return (f"resampled through {self.counts.size:,} cells of the probabilities: "
                    f"exact counts, scores within 1/{GRID_CELLS:,}{weighted}")
        if self.method == "subsample" and self.groups is not None:
            return (f"m-out-of-n bootstrap: {self.groups.size:,} of {self.n_rows:,} rows, "
                    f"spread scaled by sqrt(m/n){weighted}")
        return "rows resampled" + weighted

    def blocks(
        self, n_resamples: int, random_state: int | np.random.Generator | None
    ) -> Generator[NDArray[np.float64], None, None]:
        """The resamples as count weights over the plan's rows or cells, in blocks (times
        ``unit_weights`` with row weights)."""
        if self.unit_weights is not None:
            noise = np.random.default_rng(
                [random_state, 2] if isinstance(random_state, int) else random_state)
            unweighted = replace(self, unit_weights=None, unit_spread=None)
            for counts in unweighted.blocks(n_resamples, random_state):
                mass = counts * self.unit_weights
                if self.unit_spread is not None:
                    mass += (np.sqrt(counts) * self.unit_spread
                             * noise.standard_normal(counts.shape))
                    np.maximum(mass, 0.0, out=mass)
                yield mass
            return
        if self.method != "cells" or self.counts is None:
            size = self.n_rows if self.groups is None else self.groups.size
            yield from resample_blocks(size, n_resamples, random_state)
            return
        rng = np.random.default_rng(random_state)
        shares = self.counts / self.counts.sum()
        # small blocks: each takes a fraction of a second, so progress keeps moving
        block = max(1, min(BLOCK_ELEMENTS // self.counts.size, CELL_BLOCK_RESAMPLES))
        for start in range(0, n_resamples, block):
            size = min(block, n_resamples - start)
            yield rng.multinomial(self.n_rows, shares, size=size).astype(np.float64)


def resampling_plan(
    labels: NDArray[np.intp],
    proba: NDArray[np.float64],
    n_bins: int,
    random_state: int | np.random.Generator | None,
    sample_weight: NDArray[np.float64] | None = None,
) -> ResamplingPlan:
    """The cheapest faithful way to resample these rows (module docstring)."""
    n_rows = labels.size
    if n_rows <= ROW_BOOTSTRAP_MAX_ROWS:
        return ResamplingPlan("rows", n_rows, unit_weights=sample_weight)
    cells = row_cells(labels, proba, n_bins)
    if cells is not None:
        groups, counts = cells
        if sample_weight is None:
            return ResamplingPlan("cells", n_rows, groups, counts)
        unit = np.bincount(groups, weights=sample_weight, minlength=counts.size) / counts
        second = np.bincount(groups, weights=np.square(sample_weight), minlength=counts.size)
        spread = np.sqrt(np.maximum(second / counts - np.square(unit), 0.0))
        same = bool(np.all(spread <= 1e-12 * np.maximum(unit, 1e-300)))
        return ResamplingPlan("cells", n_rows, groups, counts, unit_weights=unit,
                              unit_spread=None if same else spread)
    plan = subsample_plan(n_rows, random_state)
    if sample_weight is not None and plan.groups is not None:
        plan = replace(plan, unit_weights=sample_weight[plan.groups])
    return plan


def subsample_plan(
    n_rows: int, random_state: int | np.random.Generator | None
) -> ResamplingPlan:
    """Rows resampled as they are up to :data:`ROW_BOOTSTRAP_MAX_ROWS`, else the
    m-out-of-n bootstrap on a seeded subsample of :data:`SUBSAMPLE_ROWS` rows (for a
    mean, the scaled spread is the row bootstrap's, up to the subsample's estimate of
    the variance: about 0.5% relative error at 20,000 rows)."""
    if n_rows <= ROW_BOOTSTRAP_MAX_ROWS:
        return ResamplingPlan("rows", n_rows)
    # an integer seed gets a stream of its own, so the subsample does not repeat in the
    # resamples drawn from that seed
    rng = np.random.default_rng(
        [random_state, 1] if isinstance(random_state, int) else random_state)
    rows = np.sort(rng.choice(n_rows, size=SUBSAMPLE_ROWS, replace=False))
    return ResamplingPlan("subsample", n_rows, rows, scale=float(np.sqrt(SUBSAMPLE_ROWS / n_rows)))


def row_cells(
    labels: NDArray[np.intp], proba: NDArray[np.float64], n_bins: int
) -> tuple[NDArray[np.intp], NDArray[np.float64]] | None:
    """Cell of each row and rows per cell, or None when cells would not halve the rows.

    A cell holds rows with the same label, the same equal-width bin (of ``n_bins``) of
    the top-label score and, for every class, the same of the ``GRID_CELLS`` sub-cells
    of [0, 1] refining the equal-width bins of its probability (bins right-closed,
    like :func:`calibcore.metrics.assign_bins`), so no cell straddles a bin edge.
    """
    n_rows, n_classes = proba.shape
    if n_classes > 2:
        # a row's cell depends on that row alone: probe the first rows before computing
        # every row's (with many classes, an (n, K) array)
        head, _ = cell_columns(labels[:PROBE_ROWS], proba[:PROBE_ROWS], n_bins)
        probe = np.unique(np.column_stack(head), axis=0)
        if probe.shape[0] > min(PROBE_ROWS, n_rows) // 2:
            return None
    key, _ = row_cell_keys(labels, proba, n_bins)
    if key is not None:
        # hashing, then sorting the distinct keys only: the groups and counts of
        # np.unique(key, return_inverse=True, return_counts=True) in 40% of its time
        groups, distinct = pd.factorize(key, sort=True)
        counts = np.bincount(groups, minlength=distinct.size)
    else:
        columns, _ = cell_columns(labels, proba, n_bins)
        _, groups, counts = np.unique(np.column_stack(columns), axis=0,
                                      return_inverse=True, return_counts=True)
    if counts.size > n_rows // 2:
        return None
    return groups.ravel().astype(np.intp, copy=False), counts.astype(np.float64)


def row_cell_keys(
    labels: NDArray[np.intp], proba: NDArray[np.float64], n_bins: int
) -> tuple[NDArray[np.int64] | None, list[int]]:
    """Each row's cell as one int64: the coordinates of :func:`cell_columns` numbered in
    their lexicographic order (``np.ravel_multi_index(columns, sizes)``), computed in one
    compiled pass; None when they do not fit one int64. Also how many values each
    coordinate takes."""
    per_bin, sizes = _cell_grid(proba.shape[1], n_bins)
    if np.sum(np.log2(sizes)) >= 62:
        return None, sizes
    return cell_keys(np.ascontiguousarray(labels, dtype=np.int64),
                     np.ascontiguousarray(proba, dtype=np.float64),
                     equal_width_edges(n_bins), per_bin), sizes


def cell_columns(
    labels: NDArray[np.intp], proba: NDArray[np.float64], n_bins: int
) -> tuple[list[NDArray[np.int64]], list[int]]:
    """The coordinates of each row's cell (label, top-label bin, each class's sub-cell)
    and how many values each coordinate takes; cells in lexicographic order of these
    are in the order :func:`row_cells` numbers them."""
    n_classes = proba.shape[1]
    per_bin, sizes = _cell_grid(n_classes, n_bins)
    edges = equal_width_edges(n_bins)
    columns = [labels.astype(np.int64), assign_bins(top_class(proba)[1], edges).astype(np.int64)]
    columns += [_sub_cells(proba[:, k], edges, per_bin) for k in range(n_classes)]
    return columns, sizes


def _cell_grid(n_classes: int, n_bins: int) -> tuple[int, list[int]]:
    """Sub-cells per bin, and how many values each coordinate of a cell takes."""
    per_bin = max(1, -(-GRID_CELLS // n_bins))
    return per_bin, [n_classes, n_bins] + [n_bins * per_bin] * n_classes


def _sub_cells(
    values: NDArray[np.float64], edges: NDArray[np.float64], per_bin: int
) -> NDArray[np.int64]:
    """Index of the sub-cell of each value: its bin times ``per_bin`` plus the sub-cell
    within the bin (right-closed, like the bins)."""
    bins = assign_bins(values, edges)
    position = (values - edges[bins]) / (edges[bins + 1] - edges[bins]) * per_bin
    within = np.clip(np.ceil(position).astype(np.int64) - 1, 0, per_bin - 1)
    return bins.astype(np.int64) * per_bin + within
