"""Fit every job kind's cost model on measured runs and write ``app/services/cost_table.py``.

Each job kind's estimate counts its work as named terms before starting (see
:class:`app.services.cost.CostModel`); this script times every kind over a few file
sizes (:data:`benchmarks.job_kinds.FIT_FILES`: the bundled example and its first 2,000
rows, wide files of 30 and 85 features, long files of 30,000 and 300,000 rows, and two
with row weights, of 12,000 and 300,000 rows, and two of 10 classes, of 6,000 and
60,000 rows) and fits, per model, the non-negative
seconds per unit of each term that minimize the squared *relative* error over its runs
(``scipy.optimize.nnls`` on the rows divided by the measured seconds). The seconds
fitted are the wall time of runs made at a load average under 1.5; on a loaded machine
(other processes taking the 2 cores) the process's CPU seconds / sqrt(2), capped by the
wall time, stand in for it (:attr:`benchmarks.job_kinds.Run.quiet_seconds`). The spread
written beside each model is the largest factor between a run and the fit; a spread over
2 makes the pages show a range instead of a point.

The runs are kept in ``benchmarks/cost_runs.csv``; refitting some kinds re-times only
those and refits every model from the file. After a change that makes a job faster or
slower (e.g. the variable ranking or HH), refit it with one command::

    python -m benchmarks.fit_costs --kinds variables heterogeneity

and check with ``python -m benchmarks.bench_estimates``. Fit on a quiet machine (the
load average is printed and kept with each run): a model fitted under load is
pessimistic.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from benchmarks.job_kinds import FIT_FILES, KINDS, MODEL_OF, QUICK_FILES, Run, run_files

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "benchmarks" / "cost_runs.csv"
TABLE = ROOT / "app" / "services" / "cost_table.py"
FIELDS = ("model", "kind", "case", "file", "seconds", "cpu_seconds", "load",
          "quiet_seconds", "terms")


def fit(rows: list[dict[str, str]]) -> tuple[dict[str, float], float]:
    """Non-negative seconds per term minimizing the relative squared error; the spread."""
    terms = [json.loads(row["terms"]) for row in rows]
    names = sorted({name for counted in terms for name, value in counted.items() if value})
    measured = np.maximum([float(row.get("quiet_seconds") or row["seconds"]) for row in rows],
                          1e-3)
    design = np.array([[counted.get(name, 0.0) if name != "fixed" else 1.0
                        for name in names] for counted in terms])
    scale = design.max(axis=0)
    scale[scale == 0] = 1.0
    solution, _ = nnls((design / scale) / measured[:, None], np.ones(measured.size))
    coefficients = solution / scale
    fitted = design @ coefficients
    ratios = np.maximum(fitted, 1e-6) / measured
    spread = float(np.max(np.maximum(ratios, 1 / ratios)))
    return {name: float(c) for name, c in zip(names, coefficients, strict=True)}, spread


def write_table(runs: list[dict[str, str]]) -> str:
    """``app/services/cost_table.py`` from the runs; its text."""
    by_model = _by_model(runs)
    lines = []
    for model in sorted(by_model):
        coefficients, spread = fit(by_model[model])
        loads = [float(row["load"]) for row in by_model[model]]
        words = "".join(f'        "{name}": {value:.4g},\n' for name, value in
                        coefficients.items())
        lines.append(f"    # {len(loads)} runs, load average {min(loads):.1f}-{max(loads):.1f}\n"
                     f'    "{model}": ({{\n{words}    }}, '
                     f"{np.ceil(spread * 100) / 100:.2f}),")
    today = datetime.date.today().isoformat()
    text = (f'"""Fitted cost models of every job kind: seconds per unit of each counted term.\n\n'
            f"Written by ``python -m benchmarks.fit_costs`` on {today} from the measured runs\n"
            "in ``benchmarks/cost_runs.csv`` (2 cores; the load average of each run is kept\n"
            'there); do not edit by hand: refit.\n"""\n\n'
            "from __future__ import annotations\n\n"
            "#: job kind -> (seconds per unit of each term, spread: the largest factor between\n"
            "#: a measured run and the fit); :class:`app.services.cost.CostModel` reads it.\n"
            "COST_MODELS: dict[str, tuple[dict[str, float], float]] = {\n"
            + "\n".join(lines) + "\n}\n")
    TABLE.write_text(text)
    return text


def _write_runs(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def _by_model(runs: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    by_model: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in runs:
        by_model[row["model"]].append(row)
    return by_model


def _row(run: Run) -> dict[str, str]:
    return {"model": MODEL_OF.get(run.kind, run.kind), "kind": run.kind, "case": run.case,
            "file": run.file, "seconds": f"{run.seconds:.3f}",
            "cpu_seconds": f"{run.cpu_seconds:.3f}", "load": f"{run.load:.2f}",
            "quiet_seconds": f"{run.quiet_seconds:.3f}",
            "terms": json.dumps({k: round(v, 3) for k, v in run.terms.items()})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS),
                        help="re-time only these kinds (the others' runs are kept)")
    parser.add_argument("--refit-only", action="store_true",
                        help="time nothing: refit every model from the kept runs")
    parser.add_argument("--files", nargs="+", default=None,
                        help="time only the fitting files whose names contain one of these")
    parser.add_argument("--runs", type=Path, default=RUNS,
                        help=f"where the runs are kept (default {RUNS.relative_to(ROOT)})")
    parser.add_argument("--quick", action="store_true",
                        help="tiny files, print the runs and the fit, write nothing")
    arguments = parser.parse_args()
    kinds = tuple(arguments.kinds)
    runs_path: Path = arguments.runs
    files = {name: make for name, make in FIT_FILES.items()
             if arguments.files is None or any(part in name for part in arguments.files)}
    kept = []
    if runs_path.exists():
        with runs_path.open() as handle:
            kept = list(csv.DictReader(handle))
    if not arguments.refit_only:
        if {"lce", "lce_curve"} & set(kinds):  # one model: both are timed
            kinds = tuple(sorted(set(kinds) | {"lce", "lce_curve"}))
        print(f"load average before: {os.getloadavg()[0]:.2f}")

        others = [row for row in kept
                  if row["kind"] not in kinds or row["file"] not in files]
        timed: list[dict[str, str]] = []

        def report(run: Run) -> None:  # each run kept as soon as it is timed
            print(f"{run.seconds:8.2f} s (CPU {run.cpu_seconds:7.2f} s, quiet "
                  f"{run.quiet_seconds:7.2f} s)  estimate {run.estimate.seconds:8.2f} s  "
                  f"load {run.load:4.1f}  {run.kind}: {run.case}, {run.file}", flush=True)
            timed.append(_row(run))
            if not arguments.quick:
                _write_runs(runs_path, others + timed)

        runs = run_files(QUICK_FILES if arguments.quick else files, kinds,
                         defaults_only=arguments.quick, report=report)
        if arguments.quick:
            for model, rows in _by_model([_row(r) for r in runs]).items():
                print(model, *fit(rows))
            return
        kept = others + timed
    print(write_table(kept))
    for model, rows in _by_model(kept).items():  # how far each run lies from its fit
        coefficients, _ = fit(rows)
        for row in rows:
            counted = json.loads(row["terms"])
            fitted = coefficients.get("fixed", 0.0) + sum(
                coefficients.get(name, 0.0) * value for name, value in counted.items()
                if name != "fixed")
            measured = max(float(row["quiet_seconds"]), 1e-3)
            print(f"{model:14} fitted {fitted:8.2f} s / measured {measured:8.2f} s = "
                  f"{fitted / measured:5.2f}  {row['case']}, {row['file']}")


if __name__ == "__main__":
    main()
