"""Past one machine: ``calibdash report --engine dask`` on a generated Parquet set.

* 50M rows (binary, 5 features, 50 files; generated here in chunks into a temporary
  folder, never committed) through ``calibdash report DIR/*.parquet --engine dask`` in a
  subprocess on a local in-process cluster: under 120 s with peak memory (the process's
  high-water RSS) under 3 GB.
* Beside it, the in-memory path on the largest size this machine holds comfortably
  (5M rows): pandas reads every file and :mod:`calibcore.metrics` computes the same
  binned measures; the note says how the values compare.
* The same report against a scheduler and two workers started with Dask's own command
  line (``dask scheduler``, ``dask worker``), on the 5M-row set.

Run: ``python -m benchmarks.bench_scale`` (a few minutes, most of it writing 50M rows;
``--quick`` for tiny sizes).

``python -m benchmarks.bench_scale --target [--rows N] [--files N] [--repeat N]
[--folder DIR]`` runs only the target case: 100M rows (an int8 label, a float32
P(positive), two float32 features) in 200 Parquet files, written (seeded) under a
temporary folder unless ``--folder`` holds them, through ``calibdash report DIR/*.parquet
--engine dask`` ``--repeat`` times; it prints each run's seconds, process CPU seconds
and peak RSS of the whole process tree (the report's process and any worker it starts,
sampled every 0.1 s, and never below the process's own high-water mark) against the
targets (under 90 s and 2 GiB), PASS or FAIL, and the load average.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.table import Row
from calibcore import metrics
from calibcore.metrics import global_measures

ROWS_PER_FILE = 1_000_000


def write_dataset(folder: Path, n_rows: int, rows_per_file: int = ROWS_PER_FILE,
                  seed: int = 0, n_features: int = 5) -> Path:
    """Binary predictions (an int8 label, a float32 P(positive)) with ``n_features``
    float32 features as Parquet files of ``rows_per_file`` rows."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for number, start in enumerate(range(0, n_rows, rows_per_file)):
        size = min(rows_per_file, n_rows - start)
        features = rng.normal(size=(size, n_features)).astype(np.float32)
        positive = 1.0 / (1.0 + np.exp(-(features[:, 0] + 0.5 * features[:, 1])))
        frame = pd.DataFrame(features, columns=[f"x{i}" for i in range(n_features)])
        frame.insert(0, "p_click", positive)
        frame.insert(0, "clicked", (rng.uniform(size=size) < positive**1.2).astype(np.int8))
        frame.to_parquet(folder / f"part-{number:04d}.parquet", index=False)
    return folder


def _report(folder: Path, out: Path, *extra: str) -> tuple[float, float, dict]:
    """Seconds, peak RSS (MiB) and JSON of ``calibdash report --engine dask`` in a child."""
    command = [sys.executable, "-m", "app.cli", "report", str(folder / "*.parquet"),
               "--engine", "dask", "--label", "clicked", "--probabilities", "p_click",
               "--out", str(out), *extra]
    code = ("import resource, subprocess, sys, time; began = time.perf_counter(); "
            "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
            "print(time.perf_counter() - began, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")
    timed = subprocess.run([sys.executable, "-c", code, *command],
                           capture_output=True, text=True)
    if timed.returncode != 0:  # the report's own error, not only its exit status
        raise RuntimeError(f"{' '.join(command)} exited {timed.returncode}:\n"
                           f"{timed.stderr[-4000:]}")
    seconds, peak = map(float, timed.stdout.split())
    return seconds, peak, json.loads(out.read_text())


#: The target case: rows, files, seconds and peak RSS (MiB) of the whole process tree.
TARGET_ROWS, TARGET_FILES, TARGET_SECONDS, TARGET_MIB = 100_000_000, 200, 90.0, 2048.0


def _tree_report(folder: Path) -> tuple[float, float, float]:
    """Seconds, CPU seconds and peak RSS (MiB) of the process tree of
    ``calibdash report DIR/*.parquet --engine dask`` (RSS summed over the process and
    its descendants every 0.1 s; at least the process's own high-water mark)."""
    import resource

    import psutil

    command = [sys.executable, "-m", "app.cli", "report", str(folder / "*.parquet"),
               "--engine", "dask"]
    began = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    process, peak = psutil.Process(child.pid), 0
    while child.poll() is None:
        try:
            tree = [process, *process.children(recursive=True)]
            peak = max(peak, sum(member.memory_info().rss for member in tree))
        except psutil.Error:  # a member ended between the listing and the reading
            pass
        time.sleep(0.1)
    seconds = time.perf_counter() - began
    stderr = child.stderr.read() if child.stderr else ""
    if child.returncode != 0:
        raise RuntimeError(f"report exited {child.returncode}:\n{stderr[-3000:]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, usage.ru_utime + usage.ru_stime, max(peak / 2**20, usage.ru_maxrss / 1024)


def run_target(rows: int = TARGET_ROWS, files: int = TARGET_FILES, repeat: int = 2,
               folder: Path | None = None) -> bool:
    """The target case, ``repeat`` times; True when the fastest run meets both targets."""
    with tempfile.TemporaryDirectory() as directory:
        if folder is None:
            began = time.perf_counter()
            folder = write_dataset(Path(directory) / "data", rows, -(-rows // files),
                                   n_features=2)
            print(f"wrote {rows:,} rows in {files} files in {time.perf_counter() - began:.0f} s",
                  flush=True)
        results = []
        for number in range(repeat):
            cpu_before = resource_children_cpu()
            seconds, cpu, peak = _tree_report(folder)
            results.append((seconds, peak))
            print(f"run {number + 1}: {seconds:.1f} s (CPU {cpu - cpu_before:.1f} s), peak RSS "
                  f"{peak:,.0f} MiB; load average {os.getloadavg()[0]:.1f}", flush=True)
    seconds, peak = min(results)
    passed = seconds < TARGET_SECONDS and max(p for _, p in results) < TARGET_MIB
    print(f"{'PASS' if passed else 'FAIL'}: report --engine dask on {rows:,} rows in {files} "
          f"files: fastest {seconds:.1f} s (target < {TARGET_SECONDS:g} s), peak RSS "
          f"{max(p for _, p in results):,.0f} MiB (target < {TARGET_MIB:,.0f} MiB)", flush=True)
    return passed


def resource_children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _in_memory(folder: Path) -> tuple[float, dict[str, float]]:
    began = time.perf_counter()
    frame = pd.concat([pd.read_parquet(path, columns=["clicked", "p_click"])
                       for path in sorted(folder.glob("*.parquet"))])
    labels, positive = frame["clicked"].to_numpy(), frame["p_click"].to_numpy()
    # the positive-class view, which the dask report of a binary file opens in
    values = {"ece": metrics.expected_calibration_error(labels, positive, view="positive"),
              "nll": metrics.negative_log_likelihood(labels, positive),
              "accuracy": metrics.accuracy(labels, positive)}
    intervals = global_measures(labels, positive, view="positive",
                                measures=["ece", "nll", "accuracy"], interval="hybrid")
    for key in list(values):
        estimate = intervals[key]
        assert estimate.low is not None and estimate.high is not None
        values[f"{key} low"], values[f"{key} high"] = estimate.low, estimate.high
    return time.perf_counter() - began, values


def _agreement(report: dict, values: dict[str, float]) -> str:
    measures = report["metrics"]["measures"]
    worst = max(abs(measures[key.split()[0]][key.split()[-1] if " " in key else "plug_in"]
                    - value) / max(abs(value), 1e-300) for key, value in values.items())
    return (f"ECE, NLL, accuracy and their 95% intervals equal the dask report's to "
            f"{worst:.1e} (relative)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _with_dask_cli_cluster(folder: Path, out: Path) -> tuple[float, dict]:
    """The report against ``dask scheduler`` and two ``dask worker`` processes."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).with_name("dask"))  # Dask's own command line
    scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([dask, "worker", address,
                               "--nworkers", "2", "--nthreads", "1",
                               "--dashboard-address", ":0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # the cluster is up before the report is timed: a client's connection gives up
        # after 30 s, and on a loaded machine the scheduler took longer than that to start
        from dask.distributed import Client

        with Client(address, timeout=180) as client:
            client.wait_for_workers(2, timeout=180)
        seconds, _, report = _report(folder, out, "--scheduler", address)
        return seconds, report
    finally:
        for process in (worker, scheduler):
            process.terminate()
            process.wait(timeout=30)


def _through_server(folder: Path, n_rows: int, report: dict) -> list[Row]:
    """``POST /api/v1/datasets/external`` on a running server (its local in-process
    cluster), timed from the request to the job's end, then the Overview's measures and
    reliability requests, and the server's peak RSS."""
    from benchmarks.server_jobs import request, timed_job
    from tests.live_server import live_server

    with tempfile.TemporaryDirectory() as directory, live_server(
            Path(directory), env={"CALIBDASH_EXTERNAL_ROOTS": str(folder)}) as server:
        job = timed_job(server, "POST", "/api/v1/datasets/external", {
            "uri": str(folder / "*.parquet"), "label": "clicked",
            "probabilities": ["p_click"]})
        assert job.status == "succeeded", job.result
        dataset = job.result["id"]
        began = time.perf_counter()
        measures = request(server, "GET", f"/api/v1/datasets/{dataset}/metrics")
        diagrams = request(server, "GET", f"/api/v1/datasets/{dataset}/reliability")
        overview = time.perf_counter() - began
        status = Path(f"/proc/{server.process.pid}/status").read_text().splitlines()
        peak = next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:"))
    same = all(measures["measures"][key]["value"] == item["value"]
               for key, item in report["metrics"]["measures"].items())
    external = job.result["external"]
    return [Row(f"POST /api/v1/datasets/external, {n_rows:,} rows (local in-process cluster "
                "in the server)", job.seconds,
                note=f"exact report + a seeded sample of {external['n_sample']:,} rows stored; "
                     f"progress never still for more than {job.longest_still:.1f} s; server "
                     f"peak RSS {peak:,.0f} MiB"),
            Row("Overview of that dataset: measures + both reliability diagrams", overview,
                note=f"n = {measures['n']:,}, smooth diagram on "
                     f"{diagrams['smooth'][0]['n']:,} rows; values "
                     f"{'equal' if same else 'DIFFER from'} the command line's report")]


def run(quick: bool = False) -> list[Row]:
    large, held = (30_000, 10_000) if quick else (50_000_000, 5_000_000)
    per_file = 10_000 if quick else ROWS_PER_FILE
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        began = time.perf_counter()
        big = write_dataset(root / "big", large, per_file)
        written = time.perf_counter() - began
        size = sum(path.stat().st_size for path in big.glob("*.parquet")) / 2**20
        seconds, peak, report = _report(big, root / "big.json")
        rows.append(Row(f"report --engine dask, {large:,} rows ({size:,.0f} MiB Parquet, "
                        f"{report['n_partitions']} partitions)", seconds,
                        target_seconds=None if quick else 120.0,
                        note=f"peak RSS {peak:,.0f} MiB (target 3,072); "
                             f"{report['workers']} workers; data written in {written:.0f} s"))
        if quick:  # tiny sizes only check that every step runs: reuse the first set
            small, dask_seconds, dask_report, held = big, seconds, report, large
        else:
            small = write_dataset(root / "small", held, per_file, seed=1)
            dask_seconds, _, dask_report = _report(small, root / "small.json")
        memory_seconds, values = _in_memory(small)
        rows.append(Row(f"report --engine dask, {held:,} rows", dask_seconds,
                        peer="pandas + calibcore in memory (with intervals)",
                        peer_seconds=memory_seconds,
                        note=_agreement(dask_report, values)))
        rows += _through_server(big, large, report)
        if quick:  # starting a scheduler and two worker processes would be half the smoke
            return rows  # run; the test suite starts that stack on its own
        cluster_seconds, cluster_report = _with_dask_cli_cluster(small, root / "cluster.json")
        rows.append(Row(f"report --engine dask --scheduler (dask scheduler + 2 dask workers), "
                        f"{held:,} rows", cluster_seconds,
                        note=_agreement(cluster_report, values)))
    return rows


def main() -> None:
    if "--target" in sys.argv:
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--target", action="store_true")
        parser.add_argument("--rows", type=int, default=TARGET_ROWS)
        parser.add_argument("--files", type=int, default=TARGET_FILES)
        parser.add_argument("--repeat", type=int, default=2)
        parser.add_argument("--folder", type=Path)
        args = parser.parse_args()
        sys.exit(0 if run_target(args.rows, args.files, args.repeat, args.folder) else 1)
    for row in run(quick="--quick" in sys.argv):
        target = "" if row.target_seconds is None else f" (target {row.target_seconds:g} s)"
        peer = "" if row.peer_seconds is None else f"; {row.peer} {row.peer_seconds:.2f} s"
        print(f"{'ok' if row.passed else 'MISS':4} {row.seconds:8.2f} s{target}  {row.case}"
              f"  [{row.note}{peer}]", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
