"""What no peer has, timed through a running server on 300k rows.

* The worst subgroups over 10 features (5 equal-mass bins per numeric feature, one and
  two conditions): ``POST /api/v1/datasets/{id}/subgroups`` from the request to the
  job's end; target 60 s. The file plants a miscalibrated slice; the note says where it
  ranks.
* Three models' probabilities of the same rows compared
  (``GET /api/v1/datasets/{id}/compare``: every measure per model with its interval,
  paired-bootstrap differences); target 10 s.
* The timeline of 52 weeks (``GET /api/v1/datasets/{id}/timeline?freq=W``, intervals
  and the rolling temperature fit per week); target 10 s. The model turns over-confident
  from week 40; the note says which weeks are flagged.

Run: ``python -m benchmarks.bench_insights`` (``--quick`` for tiny sizes).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.bench_load import _upload
from benchmarks.server_jobs import request, timed_job
from benchmarks.table import Row
from tests.app.test_compare_api import three_models_csv
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
    day = np.sort(rng.integers(0, 364, n_rows))
    late = day >= 7 * 39  # from the 40th week of 2024 (which starts on a Monday)
    truth[late] = 0.5 + 0.7 * (truth[late] - 0.5)
    frame.insert(0, "date", (pd.Timestamp("2024-01-01") + pd.to_timedelta(day, unit="D"))
                 .strftime("%Y-%m-%d"))
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
            began = time.perf_counter()
            timeline = request(server, "GET", f"/api/v1/datasets/{dataset}/timeline?freq=W")
            timeline_seconds = time.perf_counter() - began
            three_models_csv(n_rows).to_csv(root / "models.csv", index=False)
            models = _upload(server, root / "models.csv")
            began = time.perf_counter()
            compared = request(server, "GET", f"/api/v1/datasets/{models}/compare")
            compare_seconds = time.perf_counter() - began
    result = job.result or {}
    slices = [s["slice"] for s in result.get("subgroups", [])]
    planted = next((rank for rank, text in enumerate(slices, start=1)
                    if "region = north" in text and "x3 in" in text), None)
    lr = next(m for m in compared["models"] if m["name"] == "lr")["differences"]["nll"]
    return [Row(f"compare 3 models, {n_rows:,} rows (GET)", compare_seconds,
                target_seconds=None if quick else 10.0,
                note=f"NLL lr - gbm {lr['value']:+.4f} [{lr['low']:+.4f}, {lr['high']:+.4f}], "
                     f"p = {lr['p_value']:.2g}"),
            Row(f"worst subgroups, 10 features, {n_rows:,} rows", job.seconds,
                target_seconds=None if quick else 60.0,
                note=f"{result.get('n_tried', 0):,} slices tried; the planted slice ranks "
                     f"{planted}; {job.note()}"),
            Row(f"timeline, {len(timeline['windows'])} weeks, {n_rows:,} rows (GET)",
                timeline_seconds, target_seconds=None if quick else 10.0,
                note=f"flagged weeks {_flagged(timeline)} (shift planted from week 40)")]


def _flagged(timeline: dict) -> str:
    """The flagged weeks (numbered from 1) as ranges, e.g. ``31, 40-48, 50-52``."""
    weeks = [number for number, window in enumerate(timeline["windows"], start=1)
             if window["flagged"]]
    runs: list[list[int]] = []
    for week in weeks:
        if runs and week == runs[-1][-1] + 1:
            runs[-1].append(week)
        else:
            runs.append([week])
    return ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs) or "none"


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row.seconds:8.2f} s  {row.case}  [{row.note}]", flush=True)
