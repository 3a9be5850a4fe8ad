"""Repeated ``calibdash report --engine dask`` runs with the CPU loaded: exit codes counted.

A crash of the Dask engine that shows only now and then (a native fault in a worker
thread, or in the local cluster's teardown at interpreter exit) is caught by running
the report many times, each in its own interpreter with ``PYTHONFAULTHANDLER=1``, beside
busy-loop processes that take the cores from it (so threads interleave differently from
run to run). Every run's exit code is counted; the standard error of each failed run is
kept (the faulthandler's traceback names the frame), and the row fails unless every run
exits 0.

Run: ``python -m benchmarks.bench_dask_stress [--runs N] [--rows N] [--files N]
[--busy N] [--keep DIR]`` (default 40 runs of 20M rows in 40 Parquet files with two
busy loops: about an hour on two shared cores; ``--quick``: one run of 40,000 rows with
no busy loop, which only checks that the script works).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_scale import write_dataset
from benchmarks.table import Row

#: A process that keeps one core busy.
BUSY_LOOP = "while True: pass"


def stress(folder: Path, runs: int, busy: int, keep: Path | None = None,
           timeout: float = 900.0) -> tuple[collections.Counter[int], list[float], list[str]]:
    """Exit codes of ``runs`` reports of ``folder/*.parquet`` beside ``busy`` busy loops,
    the seconds of each run and the standard error of each failed one."""
    command = [sys.executable, "-X", "faulthandler", "-m", "app.cli", "report",
               str(folder / "*.parquet"), "--engine", "dask"]
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    codes: collections.Counter[int] = collections.Counter()
    seconds: list[float] = []
    failures: list[str] = []
    loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(busy)]
    try:
        for number in range(runs):
            began = time.perf_counter()
            try:
                done = subprocess.run(command, env=env, capture_output=True, text=True,
                                      timeout=timeout)
                code, stderr = done.returncode, done.stderr
            except subprocess.TimeoutExpired as exc:
                partial = exc.stderr.decode(errors="replace") if isinstance(
                    exc.stderr, bytes) else exc.stderr or ""
                code, stderr = -999, f"timed out after {timeout:g} s\n{partial}"
            seconds.append(time.perf_counter() - began)
            codes[code] += 1
            print(f"run {number + 1}/{runs}: exit {code} in {seconds[-1]:.1f} s", flush=True)
            if code != 0:
                failures.append(stderr)
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    (keep / f"run-{number + 1:03d}-exit{code}.stderr").write_text(stderr)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return codes, seconds, failures


def run(quick: bool = False, runs: int | None = None, rows: int = 20_000_000,
        files: int = 40, busy: int = 2, keep: Path | None = None,
        folder: Path | None = None) -> list[Row]:
    if quick:
        runs, rows, files, busy = runs or 1, 40_000, 4, 0
    runs = runs or 40
    data = f"{rows:,} rows in {files} files"
    if folder is not None:
        data = f"the Parquet files of {folder}"
    with tempfile.TemporaryDirectory() as directory:
        if folder is None:
            folder = write_dataset(Path(directory) / "data", rows, -(-rows // files),
                                   n_features=2)
        codes, seconds, failures = stress(folder, runs, busy, keep)
    counted = ", ".join(f"exit {code}: {count}" for code, count in sorted(codes.items()))
    if failures:
        print("standard error of the first failed run:\n" + failures[0][-4000:], flush=True)
    # a time row whose target is the longest run: it passes only when every run exits 0
    return [Row(f"report --engine dask x {runs} beside {busy} busy loop(s), {data}",
                max(seconds),
                target_seconds=max(seconds) if codes[0] == runs else 0.0,
                note=f"{counted}; fastest {min(seconds):.1f} s")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="write each failed run's stderr here")
    parser.add_argument("--folder", type=Path, help="an existing folder of Parquet files "
                        "(instead of generating one)")
    args = parser.parse_args()
    for row in run(args.quick, args.runs, args.rows, args.files, args.busy, args.keep,
                   args.folder):
        print(f"{'PASS' if row.passed else 'FAIL'} {row.case}: longest run {row.seconds:.1f} s"
              f" [{row.note}]", flush=True)


if __name__ == "__main__":
    main()
