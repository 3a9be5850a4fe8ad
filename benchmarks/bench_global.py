"""Global-measure benchmarks, run side by side with relplot 1.0.3.

* Every global measure except smCE (ECE, MCE, classwise ECE, Brier, binary
  Brier, NLL, accuracy, binnedECE + width, intCE, exact kCE, smooth ECE) on
  1,000,000 rows through :func:`calibcore.metrics.global_measures`
  (validation included, no bootstrap): under 2 s.
* Exact kCE on 200,000 rows against relplot's sampling estimator
  ``laplace_calibration_approx`` (10 n random pairs): no slower.
* smooth ECE against relplot's ``smECE`` on 1,000,000 rows: within 2x.
* smCE on 100,000 rows: under 10 s.
* The test of calibration (consistency resampling on kCE, 200 resamples) on
  1,500,000 rows of a miscalibrated model, validation and top-label view included: it
  rides on the overview's interval job, so it should add at most about 1 s there.

The data are the synthetic family of Błasiok et al. 2023 at b = 1 (uniform predictions,
labels drawn from them): perfectly calibrated, so the smooth ECE bandwidth is
small and its grids are the largest. Our functions take the raw (y, P(class 1))
and do validation and the top-label view; relplot gets the confidences and
correctness precomputed.

Run: ``python -m benchmarks.bench_global``.
"""

from __future__ import annotations

import numpy as np
import relplot
from numpy.typing import NDArray

from benchmarks.table import Row, timed
from calibcore.metrics import (
    MEASURES,
    consistency_resampling_test,
    global_measures,
    laplace_kernel_calibration_error,
    smooth_calibration_error,
    smooth_ece,
)


def calibrated_predictions(n_rows: int, *, random_state: int) -> tuple[NDArray[np.intp], NDArray]:
    """Labels ~ Bernoulli(p) for p ~ U[0, 1] (Błasiok et al. 2023, §10.1 at b = 1)."""
    rng = np.random.default_rng(random_state)
    proba = rng.uniform(size=n_rows)
    return (rng.uniform(size=n_rows) < proba).astype(np.intp), proba


def top_label(labels: NDArray[np.intp], proba: NDArray) -> tuple[NDArray, NDArray]:
    """relplot's input: confidence and correctness of the top label."""
    confidence = np.maximum(proba, 1.0 - proba)
    return confidence, ((proba > 0.5) == (labels == 1)).astype(np.float64)


def _all_but_smce(quick: bool) -> Row:
    n_rows = 5_000 if quick else 1_000_000
    labels, proba = calibrated_predictions(n_rows, random_state=0)
    keys = [key for key in MEASURES if key != "smooth_calibration_error"]
    seconds, _ = timed(
        lambda: global_measures(labels, proba, n_bootstrap=0, measures=keys),
        repeat=1 if quick else 3,
    )
    return Row(
        case=f"all global measures except smCE, {n_rows:,} rows (global_measures)",
        seconds=seconds,
        target_seconds=None if quick else 2.0,
        note=f"{len(keys)} measures incl. exact kCE, intCE, smooth ECE; top-label view",
    )


def _kce_versus_sampling(quick: bool) -> Row:
    n_rows = 5_000 if quick else 200_000
    labels, proba = calibrated_predictions(n_rows, random_state=1)
    confidence, correct = top_label(labels, proba)
    repeat = 1 if quick else 3
    seconds, ours = timed(lambda: laplace_kernel_calibration_error(labels, proba), repeat)
    peer_seconds, theirs = timed(
        lambda: relplot.metrics.laplace_calibration_approx(confidence, correct), repeat
    )
    return Row(
        case=f"exact kCE, {n_rows:,} rows",
        seconds=seconds,
        peer="relplot laplace_calibration_approx",
        peer_seconds=peer_seconds,
        target_ratio=1.0,
        note=f"exact {ours:.5f} vs sampled {theirs:.5f} ({10 * n_rows:,} pairs)",
    )


def _smooth_ece_versus_relplot(quick: bool) -> Row:
    n_rows = 5_000 if quick else 1_000_000
    labels, proba = calibrated_predictions(n_rows, random_state=2)
    confidence, correct = top_label(labels, proba)
    repeat = 1 if quick else 3
    seconds, ours = timed(lambda: smooth_ece(labels, proba), repeat)
    peer_seconds, theirs = timed(lambda: relplot.smECE(confidence, correct), repeat)
    return Row(
        case=f"smooth ECE, {n_rows:,} rows",
        seconds=seconds,
        peer="relplot smECE",
        peer_seconds=peer_seconds,
        target_ratio=2.0,
        note=f"ours {ours:.6f}, relplot {theirs:.6f}",
    )


def _smce(quick: bool) -> Row:
    n_rows = 5_000 if quick else 100_000
    labels, proba = calibrated_predictions(n_rows, random_state=3)
    seconds, value = timed(lambda: smooth_calibration_error(labels, proba))
    return Row(
        case=f"exact smCE, {n_rows:,} rows",
        seconds=seconds,
        target_seconds=None if quick else 10.0,
        note=f"path-LP dual by slope clipping; smCE = {value:.5f}",
    )


def _calibration_test(quick: bool) -> Row:
    n_rows = 5_000 if quick else 1_500_000
    labels, proba = calibrated_predictions(n_rows, random_state=4)
    tempered = proba**1.2 / (proba**1.2 + (1.0 - proba) ** 1.2)  # overconfident
    seconds, result = timed(lambda: consistency_resampling_test(labels, tempered),
                            repeat=1 if quick else 3)
    return Row(
        case=f"calibration test (kCE, 200 resamples), {n_rows:,} rows",
        seconds=seconds,
        target_seconds=None if quick else 1.0,
        note=f"p = {result.p_value:.3f}; {result.resampling.split(':')[0]} over "
             f"{result.n_groups:,} groups of scores",
    )


def run(quick: bool = False) -> list[Row]:
    """The global-measure points; ``quick`` uses tiny sizes (smoke test)."""
    return [
        _all_but_smce(quick),
        _kce_versus_sampling(quick),
        _smooth_ece_versus_relplot(quick),
        _smce(quick),
        _calibration_test(quick),
    ]


if __name__ == "__main__":
    for row in run():
        ratio = "" if row.ratio is None else f" ratio {row.ratio:.2f}"
        status = "ok" if row.passed else "MISS"
        print(f"{status:4} {row.seconds:7.3f} s{ratio}  {row.case}  [{row.note}]")
