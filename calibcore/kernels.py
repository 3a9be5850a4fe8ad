"""Compiling calibcore's compiled kernels ahead of the first real request.

The inner loops of the local forests of hidden heterogeneity, the LOESS curves and
their permutation ranking, the kernel sums of the local calibration error, the smooth
ECE, the isotonic ends, LECE's binary neighbourhoods, the clinical smoother, uneven bins
of many scores and the per-variable sums of partitioned tables are numba kernels,
compiled the first time a process calls them after an installation (from a fraction of
a second to about 11 s each, 40 s in all on one core) and loaded from numba's on-disk
cache after that (a few seconds in all). A compilation cannot be interrupted and reports no
progress, so a job that compiled would neither move its bar nor stop when cancelled.
:func:`compile_kernels` runs each family once on a few hundred synthetic rows, which
compiles (or loads) every kernel with the argument types the real calls use; a server
calls it in the background at start.

Examples
--------
>>> from calibcore.kernels import compile_kernels
>>> steps = []
>>> compile_kernels(lambda done, message: steps.append(message))
>>> steps[-1]
'compiled'
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = ["compile_kernels"]

#: Rows of the synthetic data each family runs on.
_ROWS = 400


def compile_kernels(progress: Callable[[float, str], None] | None = None) -> None:
    """Run every compiled kernel of calibcore once, so that later calls neither compile
    nor wait for a compilation.

    Parameters
    ----------
    progress : callable, optional
        ``progress(fraction, message)``, called before each family and at the end with
        ``(1.0, "compiled")``.
    """
    from calibcore.clinical import clinical_calibration
    from calibcore.heterogeneity import hidden_heterogeneity
    from calibcore.insights import calibration_support
    from calibcore.local import local_calibration_error
    from calibcore.metrics import (
        assign_bins,
        bin_sums,
        calibration_tests_by_view,
        global_measures,
    )
    from calibcore.metrics._resampling import row_cell_keys
    from calibcore.metrics._sorting import _rows_of_ties_sorted
    from calibcore.partitioned import variables_of_parts
    from calibcore.partitioned._window_moments import window_sums
    from calibcore.recalibration import LECE, SWC, IsotonicCalibration, VennAbers
    from calibcore.variable import loess_curves, rank_variables

    rng = np.random.default_rng(0)
    features = rng.normal(size=(_ROWS, 3))
    positive = 1.0 / (1.0 + np.exp(-features[:, 0] - 0.5 * features[:, 1]))
    labels = (rng.random(_ROWS) < positive).astype(np.int64)
    proba = np.column_stack([1.0 - positive, positive])
    weights = rng.integers(1, 4, size=_ROWS).astype(np.float64)
    half = _ROWS // 2

    def loess_both_paths() -> None:
        # exact windows up to 1,000 rows, window moments above
        for copies in (1, 3):
            x, y, p = np.tile(features[:, 0], copies), np.tile(labels, copies), np.tile(
                proba, (copies, 1))
            for row_weights in (None, np.tile(weights, copies)):
                loess_curves(x, y, p, sample_weight=row_weights)

    def partitioned_summaries() -> None:
        # a Dask task's per-variable passes, weighted and not, and uneven bins counted
        frame = pd.DataFrame({"y": labels, "p0": proba[:, 0], "p1": positive,
                              "a": features[:, 0], "b": np.round(features[:, 1], 1),
                              "w": weights})
        for weight in (None, "w"):
            variables_of_parts([frame.iloc[:half], frame.iloc[half:]], "y", ["p0", "p1"],
                               [0, 1], ["a", "b"], weight=weight)
        # the binned LOESS of many rows (these few rows are smoothed exactly)
        window_sums(features[:5, 0], np.ones(5), features[:, 1], weights, 5, squared=True)
        # uneven bins: scores contiguous and a column of probabilities (strided)
        table = np.tile(proba, (12, 1))
        edges = np.quantile(table[:, 1], np.linspace(0.0, 1.0, 16))
        for scores in (table[:, 1].copy(), table[:, 1]):
            assign_bins(scores, edges)
            for row_weights in (None, np.tile(weights, 12)):
                bin_sums(scores, np.tile(labels, 12).astype(np.float64), edges, row_weights)

    steps: list[tuple[str, Callable[[], object]]] = [
        ("measures and their intervals",  # (the cells large tables are resampled through,
         # and the stable sort of large tables' scores)
         lambda: [global_measures(labels, proba, n_bootstrap=20),
                  row_cell_keys(labels, proba, 15),
                  _rows_of_ties_sorted(positive.round(1), np.argsort(positive.round(1)))]),
        ("tests of calibration",
         lambda: [calibration_tests_by_view(labels, proba, statistic=statistic,
                                            n_resamples=20)
                  for statistic in ("kce", "smooth_ece", "ks", "kuiper")]),
        ("hidden heterogeneity",
         lambda: [hidden_heterogeneity(features[:half], labels[:half], proba[:half],
                                       proba[half:], radius=0.2, n_jobs=1,
                                       sample_weight=row_weights)
                  for row_weights in (None, weights[:half])]),
        ("calibration support",
         lambda: calibration_support(features, labels, proba, n_estimators=10,
                                     n_folds=2, n_jobs=1)),
        ("similarity-weighted calibration",
         lambda: SWC(n_estimators=10, n_jobs=1).fit(proba, labels, features)),
        ("isotonic calibration and Venn-Abers",
         lambda: [IsotonicCalibration().fit(proba, labels), VennAbers().fit(proba, labels)]),
        ("LECE's neighbourhoods",  # the sorted searches, without and with row weights
         lambda: [LECE().fit(proba, labels, sample_weight=row_weights)
                  for row_weights in (None, weights)]),
        ("LOESS curves", loess_both_paths),
        ("variable ranking",
         lambda: [rank_variables(pd.DataFrame(features, columns=["a", "b", "c"]), labels,
                                 proba, n_permutations=20, sample_weight=row_weights)
                  for row_weights in (None, weights)]),
        ("local calibration error",
         lambda: [local_calibration_error(embedding, labels, proba, gamma=1.0)
                  for embedding in (features[:, :2], np.column_stack([features, positive]))]),
        ("clinical calibration", lambda: clinical_calibration(labels, positive)),
        ("summaries of partitioned tables", partitioned_summaries),
    ]
    report = progress or _ignore
    for number, (name, step) in enumerate(steps):
        report(number / len(steps), f"compiling calibcore's kernels: {name}")
        step()
    report(1.0, "compiled")


def _ignore(fraction: float, message: str) -> None:
    """Default progress callback: report nothing."""
