"""The benchmark scripts run (tiny sizes) and print a table; real sizes run via benchmarks.run."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import run
from benchmarks.table import Row


def test_table_marks_misses_and_ratios() -> None:
    rows = [Row("fast", 1.0, target_seconds=2.0, peer="p", peer_seconds=4.0, target_ratio=2.0),
            Row("slow", 3.0, target_seconds=2.0),
            Row("speedup", 1.0, peer="ref", peer_seconds=100.0, target_ratio=50, speedup=True)]
    table = run.format_table(rows)
    assert "0.25" in table and "NO" in table and "100.00" in table
    assert [r.passed for r in rows] == [True, False, True]


def test_memory_rows_pass_under_their_target_only() -> None:
    rows = [Row("peak RSS", 0.0, mib=1_499.0, target_mib=1_500.0),
            Row("peak RSS", 0.0, mib=1_501.0, target_mib=1_500.0)]
    assert [r.passed for r in rows] == [True, False]
    assert "≤1,500 MiB" in run.format_table(rows)


#: The longest smoke run (two servers, every page's job), in a file of its own so that the
#: two test workers (whole files each) share the benchmark runs.
ON_ITS_OWN = "bench_path"


def runs_quick(name: str) -> None:
    import importlib
    import math

    rows = importlib.import_module(f"benchmarks.{name}").run(quick=True)
    # finite: a job cancelled at its time limit is timed inf (bench_path), a step not run
    assert rows and all(isinstance(r, Row) and 0 <= r.seconds < math.inf for r in rows), rows


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in run.discover() if name != ON_ITS_OWN])
def test_benchmark_module_runs_quick(name: str) -> None:
    runs_quick(name)


def test_peer_rows_refuse_values_that_disagree() -> None:
    """bench_peers times two packages only while they compute the same value."""
    from benchmarks import bench_peers

    assert "0.25" in bench_peers._agree("case", 0.25, 0.25 + 1e-13, tolerance=1e-12)
    with pytest.raises(AssertionError, match="calibdash"):
        bench_peers._agree("case", 0.25, 0.2501, tolerance=1e-9)
    with pytest.raises(AssertionError):  # a bin more on one side
        bench_peers._agree("curve", np.zeros((2, 15)), np.zeros((2, 14)), tolerance=1e-9)
    row = bench_peers._pair("Brier", lambda: 0.5, "peer", lambda: 0.5, repeat=2)
    assert row.peer == "peer" and row.target_ratio == 1.0 and row.ratio is not None
