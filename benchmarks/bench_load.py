"""The running server under load: /health latency and memory around a download.

Both through ``calibdash serve`` on loopback, as a user's browser would meet it:

* ``/health`` p50/p95 while 0, 20 and 60 clients request bootstrap intervals without
  pause (distinct parameters, so nothing is served from the cache). Target: p95 < 100 ms.
* The server's resident memory before and after downloading the corrected probabilities
  of a 1.5M-row file (``/proc/<pid>/status``), and the time of the download.

Run: ``python -m benchmarks.bench_load`` (``--quick`` for tiny sizes).
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

from benchmarks.bench_upload import prediction_csv
from benchmarks.server_jobs import post_file
from benchmarks.table import Row
from tests.live_server import LiveServer, live_server


def _get(url: str, timeout: float = 600) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def _post(url: str, body: bytes, content_type: str) -> dict:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": content_type})
    with urllib.request.urlopen(request, timeout=600) as response:
        return dict(json.loads(response.read()))


def _upload(server: LiveServer, path: Path) -> str:
    return str(post_file(server, "/api/v1/datasets", path)["id"])


def _rss_mib(server: LiveServer) -> float:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _health_under_load(server: LiveServer, dataset: str, clients: int,
                       samples: int) -> tuple[float, float]:
    stop = threading.Event()

    def heavy(client: int) -> None:
        for k in range(100_000):
            if stop.is_set():
                return
            try:
                _get(f"{server.url}/api/v1/datasets/{dataset}/metrics?n_bootstrap=100"
                     f"&n_bins={5 + (client * 37 + k) % 900}&subset=all")
            except OSError:
                return

    threads = [threading.Thread(target=heavy, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(1.0 if clients else 0.0)
    latencies = []
    for _ in range(samples):
        start = time.perf_counter()
        _get(f"{server.url}/api/v1/health", timeout=30)
        latencies.append(time.perf_counter() - start)
        time.sleep(0.05)
    stop.set()
    return float(np.percentile(latencies, 50)), float(np.percentile(latencies, 95))


def run(quick: bool = False) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        with live_server(root / "store", example=True,
                         env={"CALIBDASH_WARM_UP": "false"}) as server:
            example = json.loads(_get(f"{server.url}/api/v1/datasets"))[0]["id"]
            for clients in ((0, 4) if quick else (0, 20, 60)):
                p50, p95 = _health_under_load(server, example, clients, 10 if quick else 100)
                rows.append(Row(case=f"/health p95 with {clients} heavy clients", seconds=p95,
                                target_seconds=0.1, note=f"p50 {p50 * 1000:.1f} ms"))

        n_rows = 20_000 if quick else 1_500_000
        path = prediction_csv(n_rows, root / "big.csv")
        with live_server(root / "store-big", env={"CALIBDASH_WARM_UP": "false"}) as server:
            idle = _rss_mib(server)
            dataset = _upload(server, path)
            fitted = _post(f"{server.url}/api/v1/datasets/{dataset}/recalibrations",
                           json.dumps({"method": "temperature", "n_bootstrap": 0}).encode(),
                           "application/json")
            before = _rss_mib(server)
            peak = {"mib": before}
            done = threading.Event()

            def watch() -> None:
                while not done.wait(0.05):
                    peak["mib"] = max(peak["mib"], _rss_mib(server))

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            start = time.perf_counter()
            size = len(_get(f"{server.url}/api/v1/recalibrations/{fitted['id']}/download"
                            "?format=csv"))
            seconds = time.perf_counter() - start
            done.set()
            watcher.join()
            time.sleep(2.0)
            after = _rss_mib(server)
            rows.append(Row(
                case=f"corrected CSV download, {n_rows:,} rows ({size / 2**20:.0f} MiB)",
                seconds=seconds, target_seconds=None if quick else 8.0,
                note=f"server RSS: idle {idle:.0f} MiB, before download {before:.0f}, "
                     f"peak {peak['mib']:.0f}, 2 s after {after:.0f} "
                     f"({after - before:+.0f} MiB against before)"))
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        status = "ok" if row.passed else "MISS"
        print(f"{status:4} {row.seconds:8.3f} s  {row.case}  [{row.note}]")
