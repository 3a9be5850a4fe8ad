"""Where the million-row upload and overview spend their time, through a running server.

Writes 1.5M-row files of :func:`benchmarks.bench_path.path_csv`, serves them as
:func:`tests.live_server.live_server` does, warms the server on a small file, then
times, each the best of ``--repeat`` uploads of files of their own: the upload; the
overview's three requests together, as the page sends them
(:func:`benchmarks.bench_path._overview`); and each request alone on a fresh dataset
(nothing cached). ``pandas.read_csv`` of such a file is timed in the same run, so the
ratio the path benchmark checks can be read beside.

Run: ``python -m benchmarks.profile_overview [--rows N] [--repeat K]``; attach a
sampling profiler to the server's pid (printed) for the stacks.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from benchmarks.bench_load import _upload
from benchmarks.bench_path import Client, _overview, _timed, path_csv
from tests.live_server import live_server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_500_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        # a file of its own for every upload: sorts of the same scores are remembered
        # (calibcore.metrics._sorting), which an upload of the same file again would reuse
        paths = iter([path_csv(args.rows, root / f"rows-{seed}.csv", seed=seed)
                      for seed in range(args.repeat + 3)])
        with live_server(root / "store") as server:
            print(f"server pid {server.process.pid}", flush=True)
            client = Client(server)
            _overview(client, _upload(server, path_csv(2_000, root / "small.csv")))  # warm
            uploads, overviews = [], []
            for _ in range(args.repeat):
                upload, dataset = _timed(_upload, server, next(paths))
                uploads.append(upload)
                overviews.append(_timed(_overview, client, dataset)[0])
            alone = {}
            for name in ("metrics", "reliability", "metrics/bins"):
                dataset = _upload(server, next(paths))
                alone[name] = _timed(client.get, f"/datasets/{dataset}/{name}")[0]
        read_csv = min(_timed(pd.read_csv, root / "rows-0.csv")[0] for _ in range(3))
    upload, overview = min(uploads), min(overviews)
    print(f"upload {upload:.2f} s; overview {overview:.2f} s (alone: "
          + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in alone.items())
          + f"); pandas.read_csv {read_csv:.3f} s; upload + overview = "
          f"{(upload + overview) / read_csv:.1f}x read_csv")


if __name__ == "__main__":
    main()
