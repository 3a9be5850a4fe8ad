"""Start ``calibdash serve`` in a process of its own, for tests that need real sockets.

Run on their own (benchmarks), servers are started as users start them: ``python -m
app.cli serve``. Under pytest (``tests/conftest.py`` sets :data:`PRELOADED`) they are
forked instead from one process per test worker that has imported the app once, as
gunicorn's ``--preload`` does: a start then costs 0.3 s of CPU instead of 2.3 s (the
imports), over some thirty servers a run. The forked process runs the same command line
(:func:`app.cli.main`) with its own environment, working directory and log, and is
stopped, killed (``kill -9``) and waited for like a subprocess; ``tests/test_scripts.py``
still starts the installed command itself.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.util  # its exit handler joins children: ours (below) runs first
import os
import socket
import subprocess
import sys
import time
import traceback
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

#: Fork servers from a process that imported the app (:func:`start_server`), not start
#: ``python -m app.cli``; set by the tests' conftest.
PRELOADED = False
#: The modules the forking process imports once.
_PRELOAD = ["app.main", "app.cli"]


class ServerProcess(Protocol):
    """What tests use of a server's process (a :class:`subprocess.Popen` has it all)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


class _Forked:
    """A server forked by :func:`start_server`, with :class:`subprocess.Popen`'s methods."""

    def __init__(self, process: Any) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        return int(self._process.pid)

    def poll(self) -> int | None:
        code = self._process.exitcode
        return None if code is None else int(code)

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            raise subprocess.TimeoutExpired(f"forked server {self.pid}", timeout or 0.0)
        return int(code)

    def terminate(self) -> None:
        self._process.terminate()

    def kill(self) -> None:
        self._process.kill()


#: Every server forked in this process (a few dozen at most), so none outlives it.
_forked: list[_Forked] = []


@atexit.register
def _kill_forked() -> None:
    """A server a failed test left running must not hold up the worker's exit
    (multiprocessing joins its children then)."""
    for server in _forked:
        if server.poll() is None:
            server.kill()
            server.wait(10)


def _run_command(argv: Sequence[str], env: dict[str, str], log: str, cwd: str) -> None:
    """In the forked process: the environment, log and directory a subprocess would
    have, then the command line, then exit with its status."""
    os.environ.clear()
    os.environ.update(env)
    descriptor = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)
    os.chdir(cwd)
    if env.get("PYTHONWARNINGS") == "ignore":
        import warnings

        warnings.simplefilter("ignore")
    from app.cli import main

    code: int | str | None = 1
    try:
        code = main(list(argv))
    except SystemExit as exit_:  # argparse's refusal, as the command would exit
        code = exit_.code
    except BaseException:  # printed as the interpreter would, then status 1
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 0 if code is None else 1)


def start_server(argv: Sequence[str], *, env: dict[str, str], log: Path,
                 cwd: Path | None = None, preloaded: bool | None = None) -> ServerProcess:
    """``calibdash <argv>`` in a process of its own, its output appended to ``log``:
    forked from the preloaded app (``preloaded``; by default :data:`PRELOADED`, set
    under pytest), else ``python -m app.cli``."""
    directory = cwd or Path.cwd()
    if not (PRELOADED if preloaded is None else preloaded):
        with log.open("ab") as output:  # the server writes to its own copy of the descriptor
            return subprocess.Popen([sys.executable, "-m", "app.cli", *argv], cwd=directory,
                                    env=env, stdout=output, stderr=subprocess.STDOUT)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    process = context.Process(target=_run_command, name="calibdash-server",
                              args=(list(argv), dict(env), str(log), str(directory)))
    process.start()
    forked = _Forked(process)
    _forked.append(forked)
    return forked


def wait_until_healthy(url: str, process: ServerProcess, log: Path,
                       timeout: float = 60.0) -> None:
    """Return once ``url``'s health check answers; raise with the log's tail if the
    process ends first or ``timeout`` seconds pass (killing it then)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/v1/health", timeout=2):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                if process.poll() is None:
                    process.kill()
                raise RuntimeError("server did not start: " + log.read_text(
                    errors="replace")[-2000:]) from None
            time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class LiveServer:
    url: str
    port: int
    data_dir: Path
    process: ServerProcess


@contextmanager
def live_server(data_dir: Path, env: dict[str, str] | None = None,
                example: bool = False, kill: bool = False) -> Iterator[LiveServer]:
    """Serve on a free loopback port until the block ends (then terminate and wait; with
    ``kill``, kill it: a graceful stop first answers every request still in flight)."""
    port = free_port()
    command = ["serve", "--port", str(port), "--data-dir", str(data_dir)] + (
        [] if example else ["--no-example"])
    log = data_dir.parent / f"server-{port}.log"
    log.write_bytes(b"")
    process = start_server(command, log=log, env={
        **os.environ, "PYTHONWARNINGS": "ignore", "CALIBDASH_WARM_UP": "false", **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process, log)
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
