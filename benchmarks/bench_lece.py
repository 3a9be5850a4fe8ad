"""LECE benchmarks: TS+LECE at CIFAR-100 size and LECE's grid search.

* TS+LECE with fixed q and t, fit on 5,000 calibration rows and applied to
  10,000 test rows with 100 classes: under 2 s (Valk & Kull 2023, Appendix A.3,
  reports 34.8 s for TS+LECE and 34.2 s for LECE on CIFAR-100 DenseNet-40).
* LECE choosing q and t by 10-fold cross-validation over the paper's full
  10 x 10 grid on 5,000 rows with 10 classes: under 60 s.
* Binary LECE as the Recalibrate page runs it on a 300,000-row file with a split:
  cross-validated on the 150,000 calibration rows, then correcting all
  300,000 rows: under 10 s (the LECE half of "LECE + SWC on 300k rows in 60 s").
  Binary rows are searched in sorted order (:mod:`calibcore.recalibration._binary_neighbours`);
  the matrix search took about 740 s of CPU for this.

The probabilities come from an overconfident softmax classifier with the
classes' logits drawn at random (seeded); the timing does not depend on how
well calibrated they are.

Run: ``python -m benchmarks.bench_lece``.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from benchmarks.table import Row, timed
from calibcore.recalibration.lece import LECE, Composed
from calibcore.recalibration.scaling import TemperatureScaling

#: q and t within the ranges the paper's CV chose for TS+LECE on CIFAR-100 (Tables 10-11).
FIXED_NEIGHBORHOOD_SIZE = 0.04
FIXED_THRESHOLD = 0.01


def overconfident_predictions(
    n_rows: int, n_classes: int, *, random_state: int
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Labels and softmax probabilities of a seeded, overconfident synthetic classifier."""
    rng = np.random.default_rng(random_state)
    labels = rng.integers(0, n_classes, n_rows)
    logits = rng.normal(0.0, 1.0, (n_rows, n_classes))
    logits[np.arange(n_rows), labels] += rng.normal(3.0, 1.5, n_rows)
    scaled = 2.5 * logits
    proba = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    return labels, proba / proba.sum(axis=1, keepdims=True)


def _ts_plus_lece(quick: bool) -> Row:
    n_cal, n_test, n_classes = (300, 500, 20) if quick else (5_000, 10_000, 100)
    y_cal, p_cal = overconfident_predictions(n_cal, n_classes, random_state=0)
    _, p_test = overconfident_predictions(n_test, n_classes, random_state=1)

    def fit_and_apply() -> NDArray[np.float64]:
        lece = LECE(neighborhood_size=FIXED_NEIGHBORHOOD_SIZE, threshold=FIXED_THRESHOLD)
        model = Composed(steps=[TemperatureScaling(), lece]).fit(p_cal, y_cal)
        return model.predict_proba(p_test)

    seconds, _ = timed(fit_and_apply, repeat=1 if quick else 3)
    return Row(
        case=f"TS+LECE fit {n_cal:,} + apply {n_test:,} rows x {n_classes} classes "
        f"(q={FIXED_NEIGHBORHOOD_SIZE}, t={FIXED_THRESHOLD})",
        seconds=seconds,
        target_seconds=None if quick else 2.0,
        note="Valk & Kull 2023 (App. A.3): 34.8 s for TS+LECE on CIFAR-100",
    )


def _lece_cross_validation(quick: bool) -> Row:
    n_cal, n_classes = (300, 5) if quick else (5_000, 10)
    y_cal, p_cal = overconfident_predictions(n_cal, n_classes, random_state=2)
    seconds, model = timed(lambda: LECE(random_state=0).fit(p_cal, y_cal))
    return Row(
        case=f"LECE 10-fold CV over the 10 x 10 (q, t) grid, {n_cal:,} rows x {n_classes} classes",
        seconds=seconds,
        target_seconds=None if quick else 60.0,
        note=f"chose q={model.neighborhood_size_}, t={model.threshold_}",
    )


def _binary_lece_300k(quick: bool) -> Row:
    n_rows = 3_000 if quick else 300_000
    rng = np.random.default_rng(3)
    positive = np.round(1.0 / (1.0 + np.exp(-rng.normal(0.0, 1.5, n_rows))), 6)
    labels = (rng.uniform(size=n_rows) < positive**1.2).astype(np.intp)
    calibration = rng.uniform(size=n_rows) < 0.5

    def fit_and_apply() -> LECE:
        model = LECE(random_state=0).fit(positive[calibration], labels[calibration])
        model.predict_proba(positive)
        return model

    cpu_start = time.process_time()
    seconds, model = timed(fit_and_apply)
    cpu = time.process_time() - cpu_start
    return Row(
        case=f"binary LECE, 10-fold CV on {calibration.sum():,} calibration rows + correcting "
        f"all {n_rows:,} rows",
        seconds=seconds,
        target_seconds=None if quick else 10.0,
        note=f"CPU {cpu:.1f} s; chose q={model.neighborhood_size_}, t={model.threshold_}; "
        "neighbours found in sorted order",
    )


def run(quick: bool = False) -> list[Row]:
    """The LECE benchmarks; ``quick`` uses tiny sizes (smoke test)."""
    return [_ts_plus_lece(quick), _lece_cross_validation(quick), _binary_lece_300k(quick)]


if __name__ == "__main__":
    for row in run():
        status = "ok" if row.passed else "SLOW"
        print(f"{status:4} {row.seconds:7.2f} s  {row.case}  [{row.note}]")
