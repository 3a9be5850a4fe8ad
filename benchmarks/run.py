"""Run every ``benchmarks/bench_*.py`` and print a table of timings, targets and peer ratios.

Usage: ``python -m benchmarks.run [--quick] [--only NAME ...]``. ``--quick`` uses tiny
sizes (a smoke test of the scripts themselves); without it the full sizes are used.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.table import Row


def discover(only: Sequence[str] = ()) -> list[str]:
    """Names of the benchmark modules (``bench_*``), optionally filtered by substring."""
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                   if m.name.startswith("bench_"))
    return [n for n in names if not only or any(part in n for part in only)]


def format_table(rows: Sequence[Row]) -> str:
    header = ("case", "ours (s)", "target (s)", "peer", "peer (s)", "ratio", "goal", "ok", "note")
    lines = []
    for row in rows:
        ratio = row.ratio
        goal = ""
        if row.target_ratio is not None:
            goal = f"≥{row.target_ratio:g}× faster" if row.speedup else f"≤{row.target_ratio:g}×"
        if row.target_mib is not None:
            goal = f"≤{row.target_mib:,.0f} MiB"
        lines.append((
            row.case, f"{row.seconds:.3f}",
            "" if row.target_seconds is None else f"{row.target_seconds:g}",
            row.peer or "", "" if row.peer_seconds is None else f"{row.peer_seconds:.3f}",
            "" if ratio is None else f"{ratio:.2f}", goal, "yes" if row.passed else "NO",
            row.note))
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h)
              for i, h in enumerate(header)]
    render = [" | ".join(cell.ljust(w) for cell, w in zip(header, widths, strict=True)),
              "-+-".join("-" * w for w in widths)]
    render += [" | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True))
               for line in lines]
    return "\n".join(render)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--only", nargs="*", default=(), help="module name substrings")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    for name in discover(args.only):
        start = time.perf_counter()
        module = importlib.import_module(f"benchmarks.{name}")
        rows.extend(module.run(quick=args.quick))
        print(f"# {name}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    print(format_table(rows))
    return 0 if all(row.passed for row in rows) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
