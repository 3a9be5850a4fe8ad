"""Honest time estimates: what every job says it will take against what it takes.

A user decides from the estimate whether to press a run button: the Heterogeneity page
shows HH's and calibration support's, the Recalibrate page the methods', the Local page
the landscape's, and every job carries its estimate in its snapshot (``estimate`` of
``GET /api/v1/jobs/{id}``). Each row runs one job kind (:mod:`benchmarks.job_kinds`:
every ``jobs.submit`` of the server, at the settings its page or route starts by
default) in-process on the services a server builds, and prints the estimate beside
the measured seconds. The check: estimate / measured lies in [0.5, 2]; for a model
fitted with a spread over 2 (the page then shows a range), the measured seconds lie in
the range. "Measured" is the wall time when the load average is under 1.5; on a loaded
machine, the quiet-machine equivalent CPU seconds / sqrt(2) (capped by the wall time;
:attr:`benchmarks.job_kinds.Run.quiet_seconds`), and the wall time is printed beside it.

Files: the bundled ``default_nb`` (7,000 rows, 4 features, a split), a wide one like a
held-out file users tried (4,322 rows, 85 feature columns, a split) and a long one
(300,000 seeded rows, 4 features, a split).

Run: ``python -m benchmarks.bench_estimates`` (``--quick``: tiny files, no check;
``support heterogeneity``: only those kinds; ``--save runs.csv`` keeps the runs and
``--rescore runs.csv`` checks them again against refitted models, without re-timing).
The cost models are fitted by ``python -m benchmarks.fit_costs``; the load average of
each run is printed (a loaded machine takes longer than the estimates promise).
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

from app.services.cost import cost_model
from benchmarks.fit_costs import FIELDS
from benchmarks.fit_costs import _row as as_row
from benchmarks.job_kinds import (  # noqa: F401 (wide_frame: the wide file, used elsewhere)
    CHECKED_FILES,
    KINDS,
    QUICK_FILES,
    Run,
    run_files,
    wide_frame,
)
from benchmarks.table import Row

#: The accepted range of estimate / measured seconds.
RANGE = (0.5, 2.0)


def passed(run: Run) -> bool:
    """A point estimate within a factor of two, or a range holding the measured time."""
    if run.estimate.spread > RANGE[1]:
        return run.estimate.low <= run.quiet_seconds <= run.estimate.high
    return RANGE[0] <= run.ratio <= RANGE[1]


def _row(run: Run, quick: bool) -> Row:
    estimate = run.estimate
    shown = estimate.text()
    check = (f"range {estimate.low:.1f}-{estimate.high:.1f} s holds it"
             if estimate.spread > RANGE[1] else
             f"estimate/measured {run.ratio:.2f} in [{RANGE[0]:g}, {RANGE[1]:g}]")
    ratio_range = (None if quick else
                   (estimate.seconds / estimate.high, estimate.seconds / estimate.low)
                   if estimate.spread > RANGE[1] else (1 / RANGE[1], 1 / RANGE[0]))
    return Row(f"{run.kind}: {run.case}, {run.file}: measured (peer: the estimate)",
               run.quiet_seconds, peer="estimate", peer_seconds=max(estimate.seconds, 1e-3),
               ratio_range=ratio_range,
               note=f"shown '{shown}'; check: {check}; wall {run.seconds:.2f} s, CPU "
                    f"{run.cpu_seconds:.2f} s at load {run.load:.1f}; {estimate.basis}")


def save_runs(path: Path, runs: list[Run]) -> None:
    """The runs as ``fit_costs`` keeps them (to rescore after a refit)."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, FIELDS)
        writer.writeheader()
        writer.writerows(as_row(one) for one in runs)


def run(quick: bool = False, kinds: tuple[str, ...] = KINDS) -> list[Row]:
    runs = run_files(QUICK_FILES if quick else CHECKED_FILES, kinds, defaults_only=True)
    return [_row(one, quick) for one in runs]


def rescore(path: Path) -> list[Row]:
    """Rows of runs saved by ``--save`` (``fit_costs``' columns), their estimates made
    again from their counted terms with the current cost models (after a refit)."""
    rows = []
    with path.open() as handle:
        for saved in csv.DictReader(handle):
            model = cost_model(saved["model"])
            estimate = model.estimate(json.loads(saved["terms"]), "rescored")
            rows.append(_row(Run(saved["kind"], saved["case"], saved["file"], estimate,
                                 float(saved["seconds"]), float(saved["load"]),
                                 float(saved["cpu_seconds"])), quick=False))
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    kinds = tuple(a for a in sys.argv[1:] if a in KINDS) or KINDS
    print(f"load average before: {os.getloadavg()[0]:.2f} (fit on a quiet machine: a "
          "loaded one runs slower than the estimates)")
    if "--rescore" in sys.argv:
        rows = rescore(Path(sys.argv[sys.argv.index("--rescore") + 1]))
    else:
        runs = run_files(QUICK_FILES if quick else CHECKED_FILES, kinds, defaults_only=True)
        if "--save" in sys.argv:
            save_runs(Path(sys.argv[sys.argv.index("--save") + 1]), runs)
        rows = [_row(one, quick) for one in runs]
    for row in rows:  # --quick checks nothing: tiny jobs are mostly fixed costs
        mark = "-" if quick else "ok" if row.passed else "NO"
        print(f"{mark:3} {row.seconds:8.2f} s  estimate "
              f"{row.peer_seconds:8.2f} s  {row.case}  [{row.note}]")
    failed = [row for row in rows if not row.passed]
    if not quick:
        print(f"{len(rows) - len(failed)} of {len(rows)} estimates within their check")
    if failed and not quick:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
