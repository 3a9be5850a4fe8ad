"""What no peer has (issue 15), timed through a running server on 300k rows.

* The worst subgroups over 10 features (5 equal-mass bins per numeric feature, one and
  two conditions): ``POST /api/v1/datasets/{id}/subgroups`` from the request to the
  job's end; target 60 s. The file plants a miscalibrated slice; the note says where it
  ranks.

Run: ``python -m benchmarks.bench_insights`` (``--quick`` for tiny sizes).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.bench_load import _upload
from benchmarks.server_jobs import timed_job
from benchmarks.table import Row
from tests.live_server import live_server


def insights_csv(n_rows: int, path: Path, seed: int = 0) -> Path:
    """Binary predictions with 8 numeric and 2 categorical features; the model is
    over-confident where region == 'north' and x3 > 1."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n_rows, 8)).round(5),
                         columns=[f"x{i}" for i in range(8)])
    frame["region"] = rng.choice(["north", "south", "east", "west"], n_rows)
    frame["plan"] = rng.choice(["free", "basic", "pro"], n_rows, p=[0.5, 0.3, 0.2])
    positive = 1.0 / (1.0 + np.exp(-(frame["x0"] + 0.5 * frame["x1"]).to_numpy()))
    truth = positive.copy()
    bad = ((frame["region"] == "north") & (frame["x3"] > 1)).to_numpy()
    truth[bad] = 0.5 + 0.3 * (truth[bad] - 0.5)
    frame.insert(0, "y_prob", positive.round(6))
    frame.insert(0, "y_true", (rng.uniform(size=n_rows) < truth).astype(int))
    frame.to_csv(path, index=False)
    return path


def run(quick: bool = False) -> list[Row]:
    n_rows = 5_000 if quick else 300_000
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        path = insights_csv(n_rows, root / "insights.csv")
        (root / "store").mkdir()
        with live_server(root / "store") as server:
            dataset = _upload(server, path)
            job = timed_job(server, "POST", f"/api/v1/datasets/{dataset}/subgroups", {})
    result = job.result or {}
    slices = [s["slice"] for s in result.get("subgroups", [])]
    planted = next((rank for rank, text in enumerate(slices, start=1)
                    if "region = north" in text and "x3 in" in text), None)
    return [Row(f"worst subgroups, 10 features, {n_rows:,} rows", job.seconds,
                target_seconds=None if quick else 60.0,
                note=f"{result.get('n_tried', 0):,} slices tried; the planted slice ranks "
                     f"{planted}; {job.note()}")]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row.seconds:8.2f} s  {row.case}  [{row.note}]", flush=True)
