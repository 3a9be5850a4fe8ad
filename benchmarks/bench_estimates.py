"""Honest time estimates: what a job says it will take against what it takes.

The Heterogeneity page shows calibration support's estimate before the run button, and
the Recalibrate page SWC's; a user decides from it whether to press. Each row runs the
job the page would start, in-process on the services a server builds (the same code the
server runs), and prints the measured seconds beside the estimate; the check is that
estimate / measured lies in [0.5, 2].

Files: the bundled ``default_nb`` (7,000 rows, 4 features, a split) and a wide one like a
held-out file users tried (4,322 rows, 85 feature columns, a split).

Run: ``python -m benchmarks.bench_estimates`` (``--quick``: tiny files, no check).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from app.config import Settings
from app.services.context import Services, example_path
from app.services.datasets import RoleOverrides
from app.services.support import SupportParams, estimate_support, start_support
from app.services.tables import read_table
from benchmarks.table import Row

#: The accepted range of estimate / measured seconds.
RANGE = (0.5, 2.0)


def wide_frame(n_rows: int, n_features: int, random_state: int = 0) -> pd.DataFrame:
    """A seeded binary file with many feature columns, a split and P(class 1)."""
    rng = np.random.default_rng(random_state)
    features = rng.normal(size=(n_rows, n_features))
    score = features[:, :5] @ rng.normal(size=5)
    probability = 1 / (1 + np.exp(-score))
    frame = pd.DataFrame(features, columns=[f"x{j}" for j in range(n_features)])
    frame["y_true"] = (rng.random(n_rows) < probability).astype(int)
    frame["y_prob"] = probability.round(6)
    frame["split"] = np.where(rng.random(n_rows) < 0.5, "calibration", "test")
    return frame


def _support_row(services: Services, dataset_id: str, name: str, quick: bool) -> Row:
    params = SupportParams()
    estimate = estimate_support(services, dataset_id, params)
    began = time.perf_counter()
    job = start_support(services, dataset_id, params)
    while job.status in ("queued", "running"):
        time.sleep(0.05)
    seconds = time.perf_counter() - began
    while (record := services.store.get("job", job.id)) is None or record.meta.get(
            "status") in ("queued", "running"):  # its final record, before the folder goes
        time.sleep(0.05)
    if job.status != "succeeded":
        raise RuntimeError(f"support on {name} ended {job.status}: {job.snapshot()['error']}")
    return Row(f"calibration support, {name}: measured (peer: the page's estimate)", seconds,
               peer="estimate", peer_seconds=max(estimate.seconds, 1e-3),
               ratio_range=None if quick else (1 / RANGE[1], 1 / RANGE[0]),
               note=f"estimate/measured {estimate.seconds / seconds:.2f} (check: in "
                    f"[{RANGE[0]:g}, {RANGE[1]:g}]); {estimate.basis}")


def run(quick: bool = False) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        services = Services.build(Settings(data_dir=Path(folder), load_example=False,
                                           warm_up=False))
        services.jobs.start()
        try:
            example = read_table(example_path(), "default_nb.csv")
            files = {"default_nb (7,000 rows, 4 features)": example.head(600) if quick
                     else example}
            wide = wide_frame(400, 20) if quick else wide_frame(4_322, 85)
            files[f"wide file ({len(wide):,} rows, {wide.shape[1] - 3} features)"] = wide
            rows = []
            for name, frame in files.items():
                path = Path(folder) / "upload.csv"
                frame.to_csv(path, index=False)
                dataset = services.datasets.create_from_file(path, "upload.csv",
                                                             RoleOverrides(), name)
                rows.append(_support_row(services, dataset["id"], name, quick))
            return rows
        finally:
            services.jobs.shutdown()


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{'ok' if row.passed else 'NO':3} {row.seconds:7.2f} s  {row.case}  [{row.note}]")
