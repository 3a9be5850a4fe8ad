"""Decision-curve benchmarks.

* The decision curve (net benefit of the model, treat all, treat none) of 1,500,000 rows at
  100 thresholds, validation included, without bands: under 1 s; with 200 bootstrap
  resamples: under 1 s too (the resamples are draws of counts, not of rows).
* The paired net-benefit difference of two score vectors of the same 1,500,000 rows (a
  model and its recalibration) at 100 thresholds with 200 resamples: under 2 s.
* Against the ``dcurves`` package (Vickers' group's Python port) on 200,000 rows at 100
  thresholds, the same numbers: at least 5 times faster.

Run: ``python -m benchmarks.bench_decision``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.table import Row, timed
from calibcore.decision import decision_curve, net_benefit_difference

THRESHOLDS = np.round(np.arange(1, 101) / 101, 4)


def _rows(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    proba = rng.uniform(size=n_rows)
    return (rng.uniform(size=n_rows) < 0.1 + 0.8 * proba).astype(np.intp), proba


def _curve(quick: bool, n_bootstrap: int) -> Row:
    n_rows = 5_000 if quick else 1_500_000
    labels, proba = _rows(n_rows)
    seconds, _ = timed(lambda: decision_curve(labels, proba, thresholds=THRESHOLDS,
                                              n_bootstrap=n_bootstrap),
                       repeat=1 if quick else 3)
    return Row(case=f"decision curve, {n_rows:,} rows x 100 thresholds, "
                    f"{n_bootstrap} resamples", seconds=seconds,
               target_seconds=None if quick else 1.0, note="validation included")


def _difference(quick: bool) -> Row:
    n_rows = 5_000 if quick else 1_500_000
    labels, proba = _rows(n_rows)
    recalibrated = 0.1 + 0.8 * proba
    seconds, _ = timed(lambda: net_benefit_difference(labels, proba, recalibrated,
                                                      thresholds=THRESHOLDS, n_bootstrap=200),
                       repeat=1 if quick else 3)
    return Row(case=f"paired net-benefit difference, {n_rows:,} rows x 100 thresholds, "
                    "200 resamples", seconds=seconds,
               target_seconds=None if quick else 2.0, note="two score vectors, same rows")


def _against_dcurves(quick: bool) -> Row:
    from dcurves import dca

    n_rows = 5_000 if quick else 200_000
    labels, proba = _rows(n_rows)
    frame = pd.DataFrame({"event": labels, "model": proba})
    thresholds = THRESHOLDS.tolist()
    seconds, ours = timed(lambda: decision_curve(labels, proba, thresholds=thresholds,
                                                 n_bootstrap=0), repeat=1 if quick else 3)
    peer_seconds, theirs = timed(lambda: dca(data=frame, outcome="event",
                                             modelnames=["model"], thresholds=thresholds))
    peer = theirs[theirs["model"] == "model"].sort_values("threshold")["net_benefit"]
    gap = float(np.max(np.abs(ours.model - peer.to_numpy())))
    return Row(case=f"decision curve, {n_rows:,} rows x 100 thresholds", seconds=seconds,
               peer="dcurves dca", peer_seconds=peer_seconds, target_ratio=5.0,
               speedup=True, note=f"largest difference in net benefit {gap:.1e}")


def run(quick: bool = False) -> list[Row]:
    """The decision-curve points; ``quick`` uses tiny sizes (smoke test)."""
    return [_curve(quick, 0), _curve(quick, 200), _difference(quick), _against_dcurves(quick)]


if __name__ == "__main__":
    from benchmarks.run import format_table

    print(format_table(run()))
