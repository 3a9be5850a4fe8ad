"""The code stays lint-clean (ruff) and type-clean (mypy)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = run("ruff", "check", "--quiet", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_finds_nothing() -> None:
    result = run("mypy", "app", "calibcore", "calibdash")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
