"""Upload and parse a 300,000-row CSV, then compute what the overview shows first.

The overview first renders the measures without intervals and both reliability
diagrams; the bootstrap intervals follow from a background job (timed separately).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from benchmarks.table import Row, timed


def prediction_csv(n_rows: int, path: Path, seed: int = 0) -> Path:
    """A binary prediction file with a split, an id and ten numeric features."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_rows, 10))
    positive = 1 / (1 + np.exp(-(features[:, 0] + 0.5 * features[:, 1])))
    frame = pd.DataFrame(features, columns=[f"x{i}" for i in range(10)])
    frame.insert(0, "y_prob", np.round(positive, 6))
    frame.insert(0, "y_true", (rng.uniform(size=n_rows) < positive ** 1.2).astype(int))
    frame["split"] = np.where(rng.uniform(size=n_rows) < 0.5, "calibration", "test")
    frame["id"] = np.arange(n_rows)
    frame.to_csv(path, index=False)
    return path


def run(quick: bool = False) -> list[Row]:
    n_rows = 3_000 if quick else 300_000
    with tempfile.TemporaryDirectory() as directory:
        path = prediction_csv(n_rows, Path(directory) / "predictions.csv")
        size = path.stat().st_size
        settings = Settings(data_dir=Path(directory) / "store", load_example=False,
                            warm_up=False, allowed_hosts="testserver")
        with TestClient(create_app(settings)) as client:
            def overview() -> dict:
                with open(path, "rb") as stream:
                    created = client.post("/api/v1/datasets",
                                          files={"file": ("p.csv", stream)}).json()
                base = f"/api/v1/datasets/{created['id']}"
                client.get(f"{base}/metrics", params={"n_bootstrap": 0}).raise_for_status()
                client.get(f"{base}/reliability").raise_for_status()
                client.get(f"{base}/metrics/bins").raise_for_status()
                return created

            seconds, created = timed(overview)
            base = f"/api/v1/datasets/{created['id']}"
            interval_seconds, _ = timed(lambda: client.get(f"{base}/metrics").raise_for_status())
    return [
        Row(f"upload + parse {n_rows:,}-row CSV, measures + both diagrams", seconds,
            target_seconds=None if quick else 10.0,
            note=f"{size / 2**20:.0f} MiB file; REST calls through the ASGI app"),
        Row(f"bootstrap intervals for the overview table, {n_rows:,} rows (background job)",
            interval_seconds, note="200 resamples, every measure incl. smCE"),
    ]
