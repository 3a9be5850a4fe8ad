"""The path a user walks, end to end through a running server.

``calibdash serve`` in a subprocess on loopback; every step goes through REST as the
pages' callbacks do (the same services), timed from the request to the last byte or
to the job's end:

* a 1.5M-row binary CSV with 6 features and no split column, on a server whose start-up
  warm-up has ended (as a user's has after its first minute): upload; the overview
  (every measure with its 95% interval, both reliability diagrams and the bin
  sensitivity, requested together as the page does); upload + overview as a multiple of
  ``pandas.read_csv`` of the same file, timed in the same run (target
  :data:`READ_CSV_RATIO_TARGET`); the clinical report; temperature
  recalibration with the held-out comparison; the corrected CSV download and the
  server's RSS after it; 20 concurrent identical overview requests (they share one
  computation); the variable ranking of the 6 variables;
* default_nb (3,474 test rows): hidden heterogeneity on every test row; SWC-HH;
* a 300k-row file: HH on a sample of 3,000 rows; LECE + SWC recalibration; the UMAP
  landscape (this server compiles UMAP at start, as a user's does, and the row waits
  for that warm-up to end before it starts timing).

Every job's progress is polled every 0.1 s (:func:`benchmarks.server_jobs.poll_job`);
the note gives the longest time it stood still (the target is 2 s). The last row of
each server is its peak RSS (VmHWM); the target is :data:`PEAK_RSS_TARGET_MIB`.

Run: ``python -m benchmarks.bench_path`` (about 10 minutes; ``--quick`` for tiny sizes;
``--only million`` for the million-row path alone, ``--only default_nb``, ``--only 300k``).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.bench_load import _get, _post, _rss_mib, _upload
from benchmarks.server_jobs import poll_job
from benchmarks.table import Row
from tests.live_server import LiveServer, live_server

#: How a path starts its server: ``serve(store_folder_name, environment)``.
Serve = Callable[..., AbstractContextManager[LiveServer]]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
#: Most upload + overview may take, as a multiple of ``pandas.read_csv`` of the same file.
READ_CSV_RATIO_TARGET = 8.0
#: Most resident memory (VmHWM) a server may reach on each path.
PEAK_RSS_TARGET_MIB = 1_500.0


def path_csv(n_rows: int, path: Path, n_features: int = 6, seed: int = 0) -> Path:
    """A binary prediction file: label, probability, ``n_features`` features, no split."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_rows, n_features))
    positive = 1.0 / (1.0 + np.exp(-(features[:, 0] + 0.5 * features[:, 1]
                                      + 0.5 * np.sin(2 * features[:, 2]))))
    frame = pd.DataFrame(features.round(5), columns=[f"x{i}" for i in range(n_features)])
    frame.insert(0, "y_prob", np.round(positive, 6))
    frame.insert(0, "y_true", (rng.uniform(size=n_rows) < positive**1.2).astype(int))
    frame.to_csv(path, index=False)
    return path


class Client:
    """REST calls against one server, with job polling that records progress stalls."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.api = f"{server.url}/api/v1"

    def get(self, path: str, **query: Any) -> Any:
        suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
        return json.loads(_get(f"{self.api}{path}{suffix}"))

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return _post(f"{self.api}{path}", json.dumps(body).encode(), "application/json")

    def job(self, start: Callable[[], dict[str, Any]],
            timeout: float = 1800) -> tuple[float, dict[str, Any], float]:
        """Seconds from submitting a job to its end, its result and the longest time its
        progress stood still (:func:`benchmarks.server_jobs.poll_job`).

        A job still running after ``timeout`` is cancelled: the time is then ``inf``."""
        began = time.perf_counter()
        job_id = start()["job_id"]
        try:
            job, stall = poll_job(self.server, job_id, timeout)
        except TimeoutError:
            return float("inf"), {}, float("nan")
        if job["status"] != "succeeded":
            raise RuntimeError(f"job {job_id} {job['status']}: {job.get('error')}")
        return time.perf_counter() - began, job["result"], stall


def _overview(client: Client, dataset: str, **query: Any) -> None:
    """What the overview page asks for: measures with intervals, diagrams, bins."""
    with ThreadPoolExecutor(3) as pool:
        for future in [pool.submit(client.get, f"/datasets/{dataset}/metrics", **query),
                       pool.submit(client.get, f"/datasets/{dataset}/reliability", **query),
                       pool.submit(client.get, f"/datasets/{dataset}/metrics/bins")]:
            future.result()


def _stall_note(stall: float) -> str:
    if stall != stall:  # nan: the job was cancelled at its time limit
        return "did not finish within its time limit; cancelled"
    return f"progress still for at most {stall:.1f} s"


def _million_rows(root: Path, quick: bool, serve: Serve) -> list[Row]:
    # quick: the row bootstrap, as every size up to 20,000 rows (the real size resamples
    # cells); 5,000 rows take a quarter of the time of 20,000 through the same steps
    n_rows = 5_000 if quick else 1_500_000
    path = path_csv(n_rows, root / "million.csv")
    rows = []
    # warm-up on, as a server started by the user, and timed once it has settled: its
    # kernels loaded (else the first request pays numba's set-up) and UMAP compiled (else
    # its compilation competes for the two cores)
    with serve("store-million", {"CALIBDASH_WARM_UP": "false" if quick else "true"}
               ) as server:
        client = Client(server)
        _until_umap_compiled(client, quick)
        upload, dataset = _timed(lambda: _upload(server, path))
        rows.append(Row(f"upload, {n_rows:,} rows ({path.stat().st_size / 2**20:.0f} MiB)",
                        upload))
        overview, _ = _timed(lambda: _overview(client, dataset))
        rows.append(Row("overview: measures with 95% intervals, diagrams, bins", overview))
        rows.append(Row("upload + overview", upload + overview, target_seconds=10.0))
        # the same file read by pandas in this process, in the same run (the best of three)
        read_csv = min(_timed(lambda: pd.read_csv(path))[0] for _ in range(3))
        rows.append(Row("upload + overview against pandas.read_csv of the file",
                        upload + overview, peer="pandas.read_csv", peer_seconds=read_csv,
                        target_ratio=READ_CSV_RATIO_TARGET,
                        note=f"{(upload + overview) / read_csv:.1f}x read_csv "
                             f"(target ≤{READ_CSV_RATIO_TARGET:g}x)"))
        clinical, report = _timed(lambda: client.get(f"/datasets/{dataset}/clinical"))
        rows.append(Row("clinical report: O:E, intercept, slope, ICI/E90, HL, curve, verdict",
                        clinical, target_seconds=5.0,
                        note=f"GET .../clinical, not cached; lowess at "
                             f"{len(report['curve']['predicted'])} anchors"))

        seconds, fitted, stall = client.job(lambda: client.post(
            f"/datasets/{dataset}/recalibrations", {"method": "temperature", "async": True}))
        rows.append(Row("temperature recalibration with held-out comparison", seconds,
                        target_seconds=8.0, note=_stall_note(stall)))

        before = _rss_mib(server)
        download, size = _timed(lambda: len(_get(
            f"{client.api}/recalibrations/{fitted['id']}/download?format=csv")))
        time.sleep(2.0)
        after = _rss_mib(server)
        rows.append(Row(f"corrected CSV download ({size / 2**20:.0f} MiB)", download,
                        target_seconds=8.0, note=f"RSS {before:.0f} MiB before, {after:.0f} "
                                                 f"2 s after ({after - before:+.0f}; target "
                                                 "within 200)"))

        def one() -> float:
            began = time.perf_counter()
            client.get(f"/datasets/{dataset}/metrics", n_bins=20)
            return time.perf_counter() - began

        with ThreadPoolExecutor(20) as pool:
            began = time.perf_counter()
            latencies = list(pool.map(lambda _: one(), range(20)))
            wall = time.perf_counter() - began
        alone, _ = _timed(lambda: client.get(f"/datasets/{dataset}/metrics", n_bins=25))
        rows.append(Row("20 concurrent identical overview requests (slowest)", max(latencies),
                        note=f"all done in {wall:.1f} s; one alone, other bins: {alone:.1f} s; "
                             f"target: no one waits for another's identical work"))

        seconds, ranking, stall = client.job(lambda: client.get(
            f"/datasets/{dataset}/variables", **{"async": "true"}))
        rows.append(Row(f"variable ranking ({len(ranking['variables'])} variables)", seconds,
                        target_seconds=10.0, note=_stall_note(stall)))
        rows.append(_peak(server, "server peak RSS, million-row path"))
    return rows


def _default_nb(root: Path, quick: bool, serve: Serve) -> list[Row]:
    rows = []
    source = SHARED_DATA / "default_nb.csv"
    if quick:  # a slice, so the smoke test stays short
        source = root / "default_nb_head.csv"
        pd.read_csv(SHARED_DATA / "default_nb.csv").sample(600, random_state=0).to_csv(
            source, index=False)
    with serve("store-nb") as server:
        client = Client(server)
        dataset = _upload(server, source)
        sample: Any = 100 if quick else "all"
        seconds, _, stall = client.job(lambda: client.post(
            f"/datasets/{dataset}/heterogeneity", {"sample": sample}))
        rows.append(Row(f"HH on {'100' if quick else 'every'} test row of default_nb",
                        seconds, target_seconds=30.0, note=_stall_note(stall)))
        seconds, _, stall = client.job(lambda: client.post(
            f"/datasets/{dataset}/recalibrations", {"method": "swc_hh", "async": True,
                                                    "n_bootstrap": 0}))
        rows.append(Row("SWC-HH fit on default_nb", seconds, target_seconds=10.0,
                        note=_stall_note(stall)))
    return rows


def _three_hundred_thousand(root: Path, quick: bool, serve: Serve) -> list[Row]:
    n_rows = 1_000 if quick else 300_000  # quick: HH on every row is most of the smoke run
    path = path_csv(n_rows, root / "large.csv", seed=1)
    rows = []
    # warm-up on, as a server started by the user: UMAP compiles in the background
    warm_up = "false" if quick else "true"
    with serve("store-300k", {"CALIBDASH_WARM_UP": warm_up}) as server:
        client = Client(server)
        dataset = _upload(server, path)
        # the jobs start once the server is ready: while the start-up warm-up compiles
        # UMAP, LLVM holds the GIL for seconds at a time and a job beside it stalls
        # (HH: 52 s alone, 61-65 s beside the compile, progress still for 8 s)
        waited, _ = _timed(lambda: _until_umap_compiled(client, quick))
        rows.append(Row("server start-up: UMAP compiled (numba cache warm or not)", waited,
                        note="after the upload; the jobs below start then"))
        sample = 100 if quick else 3_000
        seconds, _, stall = client.job(lambda: client.post(
            f"/datasets/{dataset}/heterogeneity", {"sample": sample}), timeout=180)
        rows.append(Row(f"HH, sample of {sample:,} rows of {n_rows:,}", seconds,
                        target_seconds=60.0, note=_stall_note(stall)))
        # what the page now starts by default for two classes: every test row
        seconds, result, stall = client.job(lambda: client.post(
            f"/datasets/{dataset}/heterogeneity", {"sample": "all"}), timeout=180)
        rows.append(Row(f"HH, every test row ({result.get('n_evaluated', 0):,}) of "
                        f"{n_rows:,}", seconds, target_seconds=60.0,
                        note=f"{_stall_note(stall)}; {result.get('n_forests', 0)} forests"))
        seconds, _, stall = client.job(lambda: client.post(
            f"/datasets/{dataset}/recalibrations", {"methods": ["lece", "swc"], "async": True}),
            timeout=300)
        rows.append(Row(f"LECE + SWC recalibration, {n_rows:,} rows", seconds,
                        target_seconds=60.0, note=_stall_note(stall)))
        # the smoke test maps by PCA: UMAP's first use in a process compiles for a minute
        reducer = "pca" if quick else "umap"
        seconds, _, stall = client.job(lambda: client.post(
            f"/datasets/{dataset}/lce", {"reducer": reducer}))
        rows.append(Row(f"{reducer.upper()} landscape, {n_rows:,} rows", seconds,
                        target_seconds=20.0, note=f"{_stall_note(stall)}; UMAP compiled by the "
                                                  "start-up warm-up"))
        rows.append(_peak(server, "server peak RSS, 300k-row path"))
    return rows


def _until_umap_compiled(client: Client, quick: bool, timeout: float = 300) -> None:
    """Wait for the server's start-up warm-up to compile UMAP (health says ``ready``)."""
    deadline = time.monotonic() + timeout
    while not quick and client.get("/health")["umap"] != "ready":
        if time.monotonic() > deadline:
            raise TimeoutError("UMAP warm-up did not finish")
        time.sleep(0.5)


def _timed(function: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - began, result


def _peak(server: LiveServer, case: str) -> Row:
    status = Path(f"/proc/{server.process.pid}/status").read_text().splitlines()
    peak = next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:"))
    return Row(case, 0.0, note=f"{peak:,.0f} MiB", mib=peak, target_mib=PEAK_RSS_TARGET_MIB)


#: The paths of :func:`run`, by the name ``--only`` takes.
PATHS = {"million": _million_rows, "default_nb": _default_nb, "300k": _three_hundred_thousand}


def run(quick: bool = False, only: tuple[str, ...] = ()) -> list[Row]:
    """Every path (or those named in ``only``, keys of :data:`PATHS`)."""
    unknown = [name for name in only if name not in PATHS]
    if unknown:
        raise ValueError(f"unknown paths {unknown}; choose from {', '.join(PATHS)}")
    with tempfile.TemporaryDirectory() as directory, ExitStack() as stack:
        root = Path(directory)
        shared = None
        if quick:  # at tiny sizes, starting a server per path would be most of the run
            shared = stack.enter_context(live_server(root / "store"))

        def serve(store: str, env: dict[str, str] | None = None) -> AbstractContextManager[
                LiveServer]:
            return nullcontext(shared) if shared else live_server(root / store, env=env)

        rows = [row for name, path in PATHS.items() if not only or name in only
                for row in path(root, quick, serve)]
    # the targets are for the real sizes; tiny ones only check that every step runs
    return [replace(row, target_seconds=None, target_mib=None, target_ratio=None)
            for row in rows] if quick else rows


def main() -> None:
    quick = "--quick" in sys.argv
    # --only million (or default_nb, 300k; repeatable): those paths alone
    only = tuple(sys.argv[i + 1] for i, arg in enumerate(sys.argv[:-1]) if arg == "--only")
    for row in run(quick=quick, only=only):
        status = "ok" if row.passed else "MISS"
        target = "" if row.target_seconds is None else f" (target {row.target_seconds:g} s)"
        if row.target_mib is not None:
            target = f" (target under {row.target_mib:,.0f} MiB)"
        if row.ratio is not None:
            verdict = "" if row.target_ratio is None else \
                f", target ≤{row.target_ratio:g}x: {'PASS' if row.passed else 'FAIL'}"
            target = f" ({row.ratio:.1f}x {row.peer} {row.peer_seconds:.2f} s{verdict})"
        print(f"{status:4} {row.seconds:8.2f} s{target}  {row.case}  [{row.note}]", flush=True)


if __name__ == "__main__":
    main()
