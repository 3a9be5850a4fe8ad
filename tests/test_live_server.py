"""The servers tests start are forked from the preloaded app (tests/live_server.py): such
a process must behave as the ``python -m app.cli`` subprocess it stands for (status,
output, environment, working directory, kill -9)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pandas as pd

from tests.live_server import ServerProcess, free_port, start_server, wait_until_healthy


def _forked(argv: list[str], tmp_path: Path, **env: str) -> tuple[ServerProcess, Path]:
    log = tmp_path / "command.log"
    return start_server(argv, env={**os.environ, **env}, log=log, cwd=tmp_path,
                        preloaded=True), log


def _status_and_output(argv: list[str], tmp_path: Path, **env: str) -> tuple[int, str]:
    process, log = _forked(argv, tmp_path, **env)
    return process.wait(timeout=120), log.read_text()


def test_a_refused_command_line_exits_2_with_argparse_s_message(tmp_path: Path) -> None:
    status, output = _status_and_output(["serve", "--port", "not-a-port"], tmp_path)
    assert status == 2 and "argument --port: invalid int value: 'not-a-port'" in output


def test_the_given_environment_reaches_the_command(tmp_path: Path) -> None:
    status, output = _status_and_output(
        ["serve", "--port", str(free_port()), "--data-dir", str(tmp_path / "d")], tmp_path,
        CALIBDASH_MAX_UPLOAD_BYTES="not-a-number")
    assert status == 2 and "invalid setting: CALIBDASH_MAX_UPLOAD_BYTES" in output, output


def test_a_relative_path_is_read_in_the_given_directory(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    scores = rng.random(300)
    pd.DataFrame({"y_true": (rng.random(300) < scores).astype(int), "y_prob": scores}
                 ).to_csv(tmp_path / "scores.csv", index=False)
    status, output = _status_and_output(["report", "scores.csv"], tmp_path)
    assert status == 0 and "ECE: " in output, output


def test_a_forked_server_serves_and_dies_of_kill_9(tmp_path: Path) -> None:
    port = free_port()
    process, log = _forked(["serve", "--port", str(port), "--data-dir", str(tmp_path / "d"),
                            "--no-example"], tmp_path, CALIBDASH_WARM_UP="false")
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}", process, log)
        assert process.poll() is None
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
        assert f"Uvicorn running on http://127.0.0.1:{port}" in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
