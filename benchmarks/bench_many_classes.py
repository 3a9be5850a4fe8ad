"""The overview of files with many classes, through the REST API.

CIFAR-100-sized (100 classes, 20,000 rows) in the classwise view, and ImageNet-sized
class counts (1,000 classes, 10,000 and 50,000 rows) uploaded and shown in the
default (top-label) view: what the Overview page asks for, ``/metrics`` with its
bootstrap intervals and test of calibration, ``/reliability`` and ``/metrics/bins``.
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


def many_class_predictions(n_rows: int, n_classes: int, seed: int = 0
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Seeded Dirichlet-like probabilities (a peaked softmax of Gaussian logits) and
    labels drawn from a miscalibrated version (logits divided by 1.3: overconfident)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_classes, size=n_rows)
    logits = rng.normal(size=(n_rows, n_classes))
    logits[np.arange(n_rows), truth] += 3.0
    logits *= 1.2

    def softmax(values: np.ndarray) -> np.ndarray:
        values = np.exp(values - values.max(axis=1, keepdims=True))
        return values / values.sum(axis=1, keepdims=True)

    proba = np.round(softmax(logits), 6)
    proba /= proba.sum(axis=1, keepdims=True)
    actual = np.cumsum(softmax(logits / 1.3), axis=1)
    labels = np.minimum((actual < rng.uniform(size=(n_rows, 1))).sum(axis=1), n_classes - 1)
    return labels, proba


def prediction_csv(n_rows: int, n_classes: int, path: Path, seed: int = 0) -> Path:
    """A multiclass prediction file: ``label`` and ``proba_0`` .. ``proba_{K-1}``."""
    labels, proba = many_class_predictions(n_rows, n_classes, seed)
    frame = pd.DataFrame(proba, columns=[f"proba_{k}" for k in range(n_classes)])
    frame.insert(0, "label", labels)
    frame.to_csv(path, index=False, float_format="%.6g")
    return path


def _overview(client: TestClient, path: Path, view: str | None,
              n_bootstrap: int = 200) -> tuple[float, float]:
    """Upload ``path``, then the overview's three calls: seconds of each part."""
    params: dict[str, str | int] = {} if view is None else {"view": view}
    if n_bootstrap != 200:
        params["n_bootstrap"] = n_bootstrap
    with open(path, "rb") as stream:
        upload, created = timed(lambda: client.post("/api/v1/datasets",
                                                     files={"file": (path.name, stream)}))
    created.raise_for_status()
    base = f"/api/v1/datasets/{created.json()['id']}"

    def overview() -> None:
        for route in ("metrics", "reliability"):
            client.get(f"{base}/{route}", params=params).raise_for_status()
        bins = {key: value for key, value in params.items() if key == "view"}
        client.get(f"{base}/metrics/bins", params=bins).raise_for_status()

    seconds, _ = timed(overview)
    return upload, seconds


def run(quick: bool = False) -> list[Row]:
    # (rows, classes, view, whether the upload counts, target seconds)
    cases = ([(300, 4, "classwise", False, None), (400, 40, None, True, None)] if quick else
             [(20_000, 100, "classwise", False, 10.0), (10_000, 1_000, None, True, 8.0),
              (50_000, 1_000, None, True, 30.0)])
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(data_dir=Path(directory) / "store", load_example=False,
                            warm_up=False, allowed_hosts="testserver")
        with TestClient(create_app(settings)) as client:
            for n_rows, n_classes, view, with_upload, target in cases:
                path = prediction_csv(n_rows, n_classes,
                                      Path(directory) / f"p{n_rows}x{n_classes}.csv")
                size = path.stat().st_size / 2**20
                # quick: a smoke test of the path, with 20 resamples
                upload, overview = _overview(client, path, view, 20 if quick else 200)
                what = "upload + " if with_upload else ""
                rows.append(Row(
                    f"{n_classes:,} classes x {n_rows:,} rows: {what}{view or 'default'} "
                    "overview", overview + (upload if with_upload else 0.0),
                    target_seconds=target,
                    note=(f"{size:.0f} MiB CSV, upload {upload:.1f} s; /metrics (200 "
                          "resamples + test), /reliability, /metrics/bins via the ASGI app")))
    return rows


if __name__ == "__main__":
    from benchmarks.run import format_table

    print(format_table(run()))
