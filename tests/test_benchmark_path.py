"""The real-path benchmark runs (tiny sizes): a file of its own, see tests/test_benchmarks.py."""

from __future__ import annotations

import pytest

from benchmarks import run
from tests.test_benchmarks import ON_ITS_OWN, runs_quick


@pytest.mark.slow
def test_benchmark_path_runs_quick() -> None:
    assert ON_ITS_OWN in run.discover()
    runs_quick(ON_ITS_OWN)
