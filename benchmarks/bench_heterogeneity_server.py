"""Hidden heterogeneity through the running server on a 327k-row, 4-feature binary file.

The case: HH on a seeded sample of 3,000 test rows of a 327,000-row binary file with
four numeric features and a calibration/test split column, with the Heterogeneity
page's defaults otherwise (radius 0.1, seed 0, every feature, 20,000 calibration rows
for the forests, grid ``"auto"``). The file itself is not ours to ship; a seeded
synthetic proxy of the same shape stands in for it (:func:`hh_proxy_csv`): four
correlated numeric features, a model whose probabilities are calibrated on average
but wrong in two regions of feature space it cannot see in its scores (planted local
miscalibration, the hidden heterogeneity HH is meant to find), and a split column.

``calibdash serve`` runs in a subprocess; the file is uploaded through REST, the HH
job started as the page starts it and polled to its end
(:mod:`benchmarks.server_jobs`). The row is the minimum over repeats, each on a fresh
dataset (the result is cached per dataset and parameters), with the server's CPU
seconds over the job and the load average: on the shared 2-core machine the wall time
alone says little (the job keeps both cores busy, so CPU / 2 is its wall time there
when nothing else runs).

Measured (2-core machine, load 9-31 from other work): the job's CPU went from 81.6 s
(wall 41.5 s when the machine was quiet) to 44.8 s with the compiled local forests'
exact speed-ups, the numbers unchanged (mean HH 0.03469, every row's HH, alpha, OOB
accuracy and Brier score equal).

Run: ``python -m benchmarks.bench_heterogeneity_server`` (``--quick``: a small file).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.server_jobs import JobTiming, timed_job
from benchmarks.table import Row
from tests.live_server import LiveServer, live_server

#: Seconds HH may take through the server on the 327k-row file (it took 41.5 s).
TARGET_SECONDS = 20.0
N_ROWS = 327_000
N_EVALUATED = 3_000


def hh_proxy_csv(n_rows: int, path: Path, seed: int = 0) -> Path:
    """A binary prediction file with 4 numeric features, planted local miscalibration
    and a calibration/test split column (half and half, seeded).

    The true log-odds are ``x0 + 0.7 x1 - 0.5 x2 + 0.3 x0 x3``; the model's
    probabilities use the same linear part without the interaction, so they are wrong
    where ``x0 x3`` is large, and two regions get a shift the model does not see
    (``x2 > 1`` and ``x3 < -1``: +1.2; ``x1 < -1`` and ``x0 > 0.5``: -1.0).
    """
    rng = np.random.default_rng(seed)
    mixing = np.array([[1.0, 0.3, 0.0, 0.0], [0.3, 1.0, 0.2, 0.0], [0.0, 0.2, 1.0, 0.3],
                       [0.0, 0.0, 0.3, 1.0]])
    features = rng.normal(size=(n_rows, 4)) @ np.linalg.cholesky(mixing).T
    x0, x1, x2, x3 = features.T
    linear = x0 + 0.7 * x1 - 0.5 * x2
    truth = linear + 0.3 * x0 * x3 + 1.2 * ((x2 > 1) & (x3 < -1)) - 1.0 * ((x1 < -1) & (x0 > 0.5))
    frame = pd.DataFrame(features.round(5), columns=[f"x{i}" for i in range(4)])
    frame.insert(0, "y_prob", np.round(1.0 / (1.0 + np.exp(-linear)), 6))
    frame.insert(0, "y_true", (rng.uniform(size=n_rows) < 1.0 / (1.0 + np.exp(-truth)))
                 .astype(int))
    frame["split"] = np.where(rng.uniform(size=n_rows) < 0.5, "calibration", "test")
    frame.to_csv(path, index=False)
    return path


def upload(server: LiveServer, path: Path) -> str:
    """Upload ``path`` through REST with the roles the server detects; the dataset id."""
    from benchmarks.bench_load import _upload

    return _upload(server, path)


def hh_job(server: LiveServer, dataset: str, sample: int) -> JobTiming:
    """The HH job as the page starts it (its defaults, ``sample`` test rows), timed."""
    return timed_job(server, "POST", f"/api/v1/datasets/{dataset}/heterogeneity",
                     {"radius": 0.1, "sample": sample, "random_state": 0,
                      "calibration_sample": 20_000})


def run(quick: bool = False, repeat: int = 3) -> list[Row]:
    n_rows, sample = (2_000, 60) if quick else (N_ROWS, N_EVALUATED)
    repeat = 1 if quick else repeat
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        path = hh_proxy_csv(n_rows, root / "hh-proxy.csv")
        with live_server(root / "store") as server:
            timings = []
            for _ in range(repeat):  # a fresh dataset each time: results are cached
                timing = hh_job(server, upload(server, path), sample)
                if timing.status != "succeeded":
                    raise RuntimeError(f"HH job {timing.status}: {timing.result}")
                timings.append(timing)
    best = min(timings, key=lambda timing: timing.seconds)
    result = best.result
    return [Row(
        f"HH through the server, {sample:,} test rows of a {n_rows:,}-row 4-feature file "
        "(page defaults)", best.seconds, target_seconds=None if quick else TARGET_SECONDS,
        note=(f"min of {repeat}: {', '.join(f'{t.seconds:.1f}' for t in timings)} s; "
              f"{best.note()} (on 2 idle cores at best about {best.cpu_seconds / 2:.1f} s "
              f"of wall time); {result['n_forests']} forests, grid {result['grid']}, "
              f"mean HH {result['mean_hh']:.5f}"))]


def main() -> None:
    quick = "--quick" in sys.argv
    for row in run(quick=quick):
        target = "" if row.target_seconds is None else f" (target < {row.target_seconds:g} s)"
        print(f"{'PASS' if row.passed else 'FAIL'} {row.seconds:7.2f} s{target}  {row.case}  "
              f"[{row.note}]", flush=True)


if __name__ == "__main__":
    main()
