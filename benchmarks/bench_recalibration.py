"""Recalibrator fits side by side with peers: temperature scaling against
scikit-learn's, on 327,000 rows.

* Temperature scaling, 327,000 rows x 10 classes: ours (Newton steps on the inverse
  temperature, :func:`calibcore.recalibration.scaling.fit_temperature`) against
  scikit-learn's ``_TemperatureScaling`` (the calibrator behind
  ``CalibratedClassifierCV(method="temperature")``), within 1.5x. Both fit the same
  log-probabilities; the note gives both temperatures.
* Histogram binning, 327,000 rows: ours (equal-mass bins) against netcal's
  ``HistogramBinning(equal_intervals=False)`` (equal-mass too), within 1.5x. netcal
  needs PyTorch, so it is not a test dependency: ``pip install netcal torch==2.13.0``
  (the CPU build) to get this row's peer; without it the row is printed with no peer.
* The real path: through ``calibdash serve``, temperature scaling
  on a 1.5M-row binary file with 6 features and no split column (so 5-fold
  cross-fitting), the job run to completion with the held-out comparison table
  (bootstrap intervals, MLCE, max VECE, the recommendation): under 8 s. The note
  gives the server's CPU time and the load, since other work shares the 2 cores.

Run: ``python -m benchmarks.bench_recalibration``.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from benchmarks import server_jobs
from benchmarks.table import Row, timed
from calibcore.recalibration import HistogramBinning, TemperatureScaling
from tests.live_server import live_server

#: Rows of the real-path file and its target in seconds.
SERVER_ROWS = 1_500_000
SERVER_TARGET_SECONDS = 8.0


def overconfident(n_rows: int, n_classes: int, *, random_state: int,
                  ) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Labels drawn from softmax(z / 2.5), predictions softmax(z): a model 2.5x too sharp."""
    rng = np.random.default_rng(random_state)
    logits = rng.normal(scale=2.0, size=(n_rows, n_classes))
    truth = np.exp(logits / 2.5)
    truth /= truth.sum(axis=1, keepdims=True)
    labels = (rng.random(n_rows)[:, None] < np.cumsum(truth, axis=1)).argmax(axis=1)
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    return labels.astype(np.intp), proba / proba.sum(axis=1, keepdims=True)


def _temperature(quick: bool) -> Row:
    from sklearn.calibration import _TemperatureScaling

    n_rows = 5_000 if quick else 327_000
    labels, proba = overconfident(n_rows, 10, random_state=0)
    repeat = 1 if quick else 3
    seconds, ours = timed(lambda: TemperatureScaling().fit(proba, labels), repeat=repeat)
    peer_seconds, peer = timed(lambda: _TemperatureScaling().fit(proba, labels), repeat=repeat)
    return Row(
        case=f"temperature scaling fit, {n_rows:,} rows x 10 classes",
        seconds=seconds, peer="scikit-learn _TemperatureScaling", peer_seconds=peer_seconds,
        target_ratio=None if quick else 1.5,
        note=f"T = {ours.temperature_:.6f} (scikit-learn: {1.0 / peer.beta_:.6f})",
    )


def _histogram(quick: bool) -> Row:
    n_rows = 5_000 if quick else 327_000
    labels, proba = overconfident(n_rows, 2, random_state=1)
    repeat = 1 if quick else 5
    seconds, _ = timed(lambda: HistogramBinning(n_bins=15).fit(proba, labels), repeat=repeat)
    case = f"histogram binning fit, {n_rows:,} rows, 15 equal-mass bins"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # netcal's and PyTorch's import-time warnings
            from netcal.binning import HistogramBinning as NetcalHistogramBinning
    except ImportError:
        return Row(case=case, seconds=seconds,
                   note="netcal not installed (pip install netcal torch==2.13.0): no peer")

    def netcal_fit() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return NetcalHistogramBinning(bins=15, equal_intervals=False).fit(
                proba[:, 1], labels)

    peer_seconds, _ = timed(netcal_fit, repeat=repeat)
    return Row(case=case, seconds=seconds, peer="netcal HistogramBinning (equal mass)",
               peer_seconds=peer_seconds, target_ratio=None if quick else 1.5)


def _through_server(quick: bool) -> Row:
    n_rows = 3_000 if quick else SERVER_ROWS
    path = server_jobs.csv_file(n_rows)
    with tempfile.TemporaryDirectory() as directory, \
            live_server(Path(directory) / "store") as server:
        dataset = server_jobs.upload(server, path, [f"x{i}" for i in range(6)])
        job = server_jobs.timed_job(server, "POST", f"/api/v1/datasets/{dataset}/recalibrations",
                                    {"method": "temperature", "async": True})
    comparison = (job.result or {}).get("comparison") or {}
    return Row(
        case=f"temperature + held-out comparison via the server, {n_rows:,} rows x 6 features "
        "(5-fold cross-fitting)",
        seconds=job.seconds, target_seconds=None if quick else SERVER_TARGET_SECONDS,
        note=f"{job.status}; {job.note()}; comparison of {comparison.get('n', 0):,} rows, "
        f"{comparison.get('n_bootstrap', 0)} resamples",
    )


def run(quick: bool = False) -> list[Row]:
    """Recalibrator fit times; ``quick`` uses tiny sizes (smoke test)."""
    return [_temperature(quick), _histogram(quick), _through_server(quick)]


if __name__ == "__main__":
    for row in run():
        ratio = "" if row.ratio is None else f" ratio {row.ratio:.2f}"
        status = "ok" if row.passed else "MISS"
        print(f"{status:4} {row.seconds:7.3f} s{ratio}  {row.case}  [{row.note}]")
