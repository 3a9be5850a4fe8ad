"""Start ``calibdash serve`` in a subprocess, as users do, for tests that need real sockets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class LiveServer:
    url: str
    port: int
    data_dir: Path
    process: subprocess.Popen[bytes]


@contextmanager
def live_server(data_dir: Path, env: dict[str, str] | None = None,
                example: bool = False, kill: bool = False) -> Iterator[LiveServer]:
    """Serve on a free loopback port until the block ends (then terminate and wait; with
    ``kill``, kill it: a graceful stop first answers every request still in flight)."""
    port = free_port()
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port),
               "--data-dir", str(data_dir)] + ([] if example else ["--no-example"])
    log = open(data_dir.parent / f"server-{port}.log", "wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={
        **os.environ, "PYTHONWARNINGS": "ignore", "CALIBDASH_WARM_UP": "false", **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v1/health", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("server did not start: " + Path(log.name).read_text(
                        errors="replace")[-2000:]) from None
                time.sleep(0.2)
        yield LiveServer(url, port, data_dir, process)
    finally:
        if process.poll() is None:
            if kill:
                process.kill()
            else:
                process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()
