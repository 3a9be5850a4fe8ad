"""The weighted overview against the unweighted one, through a running server.

``calibdash serve`` in a subprocess on loopback; the same 1.5M-row binary file is
uploaded twice, once with a ``sample_weight`` column (integer survey-style weights 1-5,
inferred as the weight role) and once without, and the overview (every measure with its
95% interval and the test of calibration, both reliability diagrams and the bin
sensitivity, requested together as the page does) is timed on each, twice (15 and 20
bins, each a fresh computation), the better of the two kept. Target: the weighted
overview within 1.3 times the unweighted one.

Run: ``python -m benchmarks.bench_weights`` (about 2 minutes; ``--quick`` for tiny sizes).
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.bench_load import _upload
from benchmarks.bench_path import Client, _overview, _timed, path_csv
from benchmarks.table import Row
from tests.live_server import live_server

#: The largest acceptable weighted / unweighted overview time.
TARGET_RATIO = 1.3


def weighted_csv(source: Path, path: Path, seed: int = 0) -> Path:
    """``source`` with a ``sample_weight`` column of integers 1..5."""
    frame = pd.read_csv(source)
    frame["sample_weight"] = np.random.default_rng(seed).integers(1, 6, len(frame))
    frame.to_csv(path, index=False)
    return path


def _best_overview(client: Client, dataset: str) -> float:
    """The better of two fresh overviews (15 and 20 bins: nothing cached between them)."""
    return min(_timed(lambda bins=bins: _overview(client, dataset, n_bins=bins))[0]
               for bins in (15, 20))


def run(quick: bool = False) -> list[Row]:
    n_rows = 5_000 if quick else 1_500_000  # quick: every step runs, on a quarter the work
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        plain_path = path_csv(n_rows, root / "plain.csv")
        weighted_path = weighted_csv(plain_path, root / "weighted.csv")
        with live_server(root / "store") as server:
            client = Client(server)
            plain = _upload(server, plain_path)
            weighted = _upload(server, weighted_path)
            summary = client.get(f"/datasets/{weighted}")
            if not summary.get("weighted"):
                raise RuntimeError("the sample_weight column was not taken as the weights")
            unweighted_seconds = _best_overview(client, plain)
            weighted_seconds = _best_overview(client, weighted)
            resampling = client.get(f"/datasets/{weighted}/metrics")["resampling"]
    row = Row(f"weighted overview, {n_rows:,} rows (Kish n_eff = {summary['n_eff']:,.0f})",
              weighted_seconds, peer="unweighted overview", peer_seconds=unweighted_seconds,
              target_ratio=TARGET_RATIO, note=f"bootstrap {resampling}")
    # the ratio is for the real size; a tiny one only checks that every step runs
    return [replace(row, target_ratio=None)] if quick else [row]


def main() -> None:
    for row in run(quick="--quick" in sys.argv):
        print(f"{'ok' if row.passed else 'MISS':4} {row.seconds:8.2f} s vs {row.peer_seconds:.2f} s"
              f" (ratio {row.ratio:.2f}, target <= {TARGET_RATIO})  {row.case}  [{row.note}]",
              flush=True)


if __name__ == "__main__":
    main()
