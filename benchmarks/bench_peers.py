"""calibdash's measures beside the peers that compute the same thing, at 1,000,000 rows.

Each row times one calibcore function and the peer function that computes the same
value on the same inputs (best of a few repeats each, in one run), checks that the two
values agree (a mismatch raises: the comparison would not be of the same thing) and
reports ours / peer; the target is a ratio of at most 1 (no slower):

* scikit-learn's ``calibration_curve`` (15 equal-width bins) against
  :func:`calibcore.metrics.binned_reliability` in the positive-class view, which also
  gives each bin's Wilson 95% interval and count;
* scikit-learn's ``brier_score_loss`` and ``log_loss`` against
  :func:`~calibcore.metrics.binary_brier_score` and
  :func:`~calibcore.metrics.negative_log_likelihood`;
* netcal's ``ECE`` (15 bins) and torchmetrics' ``binary_calibration_error`` (15 bins, L1,
  on the CPU, tensors made before timing) against
  :func:`~calibcore.metrics.expected_calibration_error` in the positive-class view;
* relplot's ``smECE`` against :func:`~calibcore.metrics.smooth_ece` (top-label view:
  relplot gets the confidences and correctness precomputed, calibcore derives them).

A last row, without a target, sets :func:`calibcore.metrics.global_measures` (every
measure but smCE, exact kCE and intCE included, each with a 95% bootstrap interval from 200
resamples) against the sum of the peers' times for their point values.

The data are labels ~ Bernoulli(p^1.2) for p ~ U[0, 1]: miscalibrated, so every error
is well above zero. A peer that is not installed (netcal, torchmetrics) is skipped.

Run: ``python -m benchmarks.bench_peers`` (``--quick`` for tiny sizes).
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.table import Row, timed
from calibcore.metrics import (
    MEASURES,
    binary_brier_score,
    binned_reliability,
    expected_calibration_error,
    global_measures,
    negative_log_likelihood,
    smooth_ece,
)

#: Rows of the full run.
N_ROWS = 1_000_000
#: Bins of every binned measure here (netcal's and torchmetrics' default differ; both set).
N_BINS = 15


def miscalibrated(n_rows: int, seed: int = 0) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Labels ~ Bernoulli(p^1.2), p ~ U[0, 1]."""
    rng = np.random.default_rng(seed)
    proba = rng.uniform(size=n_rows)
    return (rng.uniform(size=n_rows) < proba**1.2).astype(np.intp), proba


def _agree(case: str, ours: Any, theirs: Any, tolerance: float) -> str:
    """'ours X, peer Y' after checking that they agree within ``tolerance``."""
    ours_array = np.asarray(ours, dtype=np.float64)
    theirs_array = np.asarray(theirs, dtype=np.float64)
    if ours_array.shape != theirs_array.shape or not np.allclose(
            ours_array, theirs_array, rtol=tolerance, atol=tolerance):
        raise AssertionError(f"{case}: calibdash {ours_array} but the peer {theirs_array}")
    if ours_array.ndim:
        gap = float(np.max(np.abs(ours_array - theirs_array)))
        return f"{ours_array.shape[-1]} bins agree, largest difference {gap:.1e}"
    return f"ours {float(ours_array):.9g}, peer {float(theirs_array):.9g}"


def _pair(case: str, ours: Callable[[], Any], peer_name: str, peer: Callable[[], Any],
          repeat: int, tolerance: float = 1e-12, more: str = "",
          mine: Callable[[Any], Any] = lambda value: value) -> Row:
    """Time ``ours`` and ``peer`` alternately (the best of ``repeat`` each, so a busy
    moment of the machine falls on both) and check that their values agree."""
    best, best_peer = float("inf"), float("inf")
    value = theirs = None
    for _ in range(repeat):
        seconds, value = timed(ours)
        peer_seconds, theirs = timed(peer)
        best, best_peer = min(best, seconds), min(best_peer, peer_seconds)
    note = _agree(case, mine(value), theirs, tolerance)
    print(f"{case}: calibdash {best:.4f} s, {peer_name} {best_peer:.4f} s; {note}",
          file=sys.stderr, flush=True)
    return Row(case, best, peer=peer_name, peer_seconds=best_peer, target_ratio=1.0,
               note=f"{note}{'; ' + more if more else ''}")


def _sklearn(labels: NDArray[np.intp], proba: NDArray[np.float64], n_rows: int,
             repeat: int) -> tuple[list[Row], float]:
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss, log_loss

    def curve() -> NDArray[np.float64]:
        diagram = binned_reliability(labels, proba, n_bins=N_BINS, view="positive")[0]
        filled = diagram.count > 0
        return np.stack([diagram.observed[filled], diagram.mean_score[filled]])

    rows = [
        _pair(f"reliability curve, {N_BINS} bins, {n_rows:,} rows", curve,
              "sklearn calibration_curve",
              lambda: np.stack(calibration_curve(labels, proba, n_bins=N_BINS)), repeat,
              more="calibdash adds each bin's count and Wilson 95% interval"),
        _pair(f"Brier score, {n_rows:,} rows", lambda: binary_brier_score(labels, proba),
              "sklearn brier_score_loss", lambda: brier_score_loss(labels, proba), repeat),
        _pair(f"log loss (NLL), {n_rows:,} rows",
              lambda: negative_log_likelihood(labels, proba),
              "sklearn log_loss", lambda: log_loss(labels, proba), repeat),
    ]
    return rows, sum(row.peer_seconds or 0.0 for row in rows[1:])


def _ece(labels: NDArray[np.intp], proba: NDArray[np.float64], n_rows: int,
         repeat: int) -> tuple[list[Row], float]:
    rows: list[Row] = []

    def ours() -> float:
        return expected_calibration_error(labels, proba, n_bins=N_BINS, view="positive")

    for missing in [name for name in ("netcal", "torchmetrics")
                    if importlib.util.find_spec(name) is None]:
        print(f"{missing}: not installed, its row is left out "
              "(pip install -e '.[peers]' adds netcal and torchmetrics)")
    if importlib.util.find_spec("netcal") is not None:
        from netcal.metrics import ECE

        rows.append(_pair(f"binned ECE, {N_BINS} bins, {n_rows:,} rows", ours, "netcal ECE",
                          lambda: ECE(bins=N_BINS).measure(proba, labels), repeat,
                          tolerance=1e-9))
    if importlib.util.find_spec("torchmetrics") is not None:
        import torch
        from torchmetrics.functional.classification import binary_calibration_error

        scores, targets = torch.from_numpy(proba), torch.from_numpy(labels)
        rows.append(_pair(
            f"binned ECE, {N_BINS} bins, {n_rows:,} rows", ours,
            "torchmetrics binary_calibration_error (CPU)",
            lambda: float(binary_calibration_error(scores, targets, n_bins=N_BINS,
                                                   norm="l1")),
            repeat, tolerance=1e-9,
            more=f"torch {torch.__version__}, {torch.get_num_threads()} threads"))
    return rows, min((row.peer_seconds or 0.0 for row in rows), default=0.0)


def _relplot(labels: NDArray[np.intp], proba: NDArray[np.float64], n_rows: int,
             repeat: int) -> tuple[list[Row], float]:
    import relplot

    confidence = np.maximum(proba, 1.0 - proba)
    correct = ((proba > 0.5) == (labels == 1)).astype(np.float64)
    row = _pair(f"smooth ECE, {n_rows:,} rows", lambda: smooth_ece(labels, proba),
                "relplot smECE", lambda: relplot.smECE(confidence, correct), repeat,
                tolerance=1e-9, more="relplot gets the top-label confidences precomputed")
    return [row], row.peer_seconds or 0.0


def _everything(labels: NDArray[np.intp], proba: NDArray[np.float64], n_rows: int,
                peers: float, repeat: int) -> Row:
    # smCE is left out: above 200,000 rows global_measures skips it (a linear program per
    # problem), and below it each resample is a solve of its own
    keys = [key for key in MEASURES if key != "smooth_calibration_error"]
    seconds, result = timed(lambda: global_measures(labels, proba, interval="hybrid",
                                                    measures=keys), repeat)
    with_interval = sum(m.low is not None for m in result.measures)
    return Row(f"every global measure with 95% intervals, {n_rows:,} rows", seconds,
               peer="peers' point values (Brier, log loss, ECE, smECE)", peer_seconds=peers,
               note=f"{with_interval} measures with intervals ({result.resampling}); exact "
                    "kCE, intCE, MCE, classwise ECE, accuracy besides")


def run(quick: bool = False) -> list[Row]:
    """The side-by-side rows; ``quick`` uses 5,000 rows and one repeat (smoke test)."""
    n_rows = 5_000 if quick else N_ROWS
    repeat = 1 if quick else 3
    labels, proba = miscalibrated(n_rows)
    with warnings.catch_warnings():
        # netcal and torchmetrics warn about their own optional parts on import
        warnings.simplefilter("ignore")
        sklearn_rows, sklearn_seconds = _sklearn(labels, proba, n_rows, repeat)
        ece_rows, ece_seconds = _ece(labels, proba, n_rows, repeat)
        relplot_rows, relplot_seconds = _relplot(labels, proba, n_rows, repeat)
    rows = [*sklearn_rows, *ece_rows, *relplot_rows,
            _everything(labels, proba, n_rows, sklearn_seconds + ece_seconds + relplot_seconds,
                        repeat)]
    # tiny sizes time overheads, not the computations: no targets there
    return [Row(r.case, r.seconds, peer=r.peer, peer_seconds=r.peer_seconds, note=r.note)
            for r in rows] if quick else rows


if __name__ == "__main__":
    from benchmarks.run import format_table

    print(format_table(run(quick="--quick" in sys.argv)))
