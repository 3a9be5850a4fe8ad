"""The README's commands as a new user types them, and what a built wheel really ships."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("app/ui/assets/style.css", "app/ui/assets/upload.js", "app/ui/assets/apply.js",
           "app/examples/default_nb.csv", "app/py.typed", "calibcore/py.typed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body


@contextmanager
def _running(command: list[str], *, cwd: Path, env: dict[str, str], port: int,
             log: Path) -> Iterator[str]:
    """Start ``command`` in its own process group and wait for ``/api/v1/health``."""
    url = f"http://127.0.0.1:{port}"
    with open(log, "w") as sink:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=sink,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and process.poll() is None:
                try:
                    _get(f"{url}/api/v1/health")
                    break
                except OSError:
                    time.sleep(0.3)
            else:
                pytest.fail(f"{command[0]} did not answer /api/v1/health: "
                            + log.read_text()[-3000:])
            yield url
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def _server_env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CALIBDASH_")}
    env.update(CALIBDASH_WARM_UP="false", PYTHONWARNINGS="ignore",
               # the already-built test venv; a fresh clone would make its own
               CALIBDASH_VENV=str(Path(sys.prefix)))
    return env


@pytest.mark.slow
def test_start_script_passes_flags_to_serve(tmp_path: Path) -> None:
    """``./scripts/start.sh --port P --data-dir DIR`` installs nothing extra and serves there."""
    port, data_dir = _free_port(), tmp_path / "store"
    command = [str(REPO / "scripts" / "start.sh"), "--port", str(port), "--data-dir",
               str(data_dir)]
    with _running(command, cwd=tmp_path, env=_server_env(tmp_path), port=port,
                  log=tmp_path / "start.log") as url:
        datasets = _get(f"{url}/api/v1/datasets")
    assert b"default_nb" in datasets  # the example dataset, loaded into the given directory
    assert (data_dir / "calibdash.sqlite").exists() or any(data_dir.iterdir())
    assert "error" not in (tmp_path / "start.log").read_text().lower().split("uvicorn")[0]


def test_bootstrap_refuses_a_missing_extras_argument() -> None:
    """Sourcing without the argument would hand it the caller's flags; it says so instead."""
    result = subprocess.run(["bash", "-c", f"source {REPO}/scripts/bootstrap.sh --port 9000"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "expected 'base' or 'dev'" in result.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "--quiet", "-w", str(out), str(REPO)], check=True, timeout=300,
                   cwd=out, capture_output=True)
    (built,) = out.glob("calibdash-*.whl")
    return built


@pytest.mark.slow
def test_wheel_ships_assets_and_example(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in SHIPPED if name not in names]
    assert not missing, f"the wheel lacks {missing}"
    assert not any(name.startswith("tests/") for name in names)


@pytest.mark.slow
def test_installed_wheel_serves_its_css_and_js(wheel: Path, tmp_path: Path) -> None:
    """Installed (not editable), ``calibdash serve`` finds its CSS, scripts and example."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
                    "--target", str(target), str(wheel)], check=True, timeout=300)
    env = _server_env(tmp_path)
    # the wheel's copy comes first; dependencies from the test venv
    env["PYTHONPATH"] = os.pathsep.join([str(target), sysconfig.get_paths()["purelib"]])
    port = _free_port()
    probe = subprocess.run([sys.executable, "-c", "import app; print(app.__file__)"], env=env,
                           cwd=tmp_path, capture_output=True, text=True, check=True)
    assert probe.stdout.strip().startswith(str(target))
    command = [sys.executable, "-c", "from app.cli import main; raise SystemExit(main())",
               "serve", "--port", str(port), "--data-dir", str(tmp_path / "store")]
    with _running(command, cwd=tmp_path, env=env, port=port, log=tmp_path / "serve.log") as url:
        page = _get(f"{url}/").decode()
        for asset in ("style.css", "upload.js", "apply.js"):
            assert f"/assets/{asset}" in page
            assert len(_get(f"{url}/assets/{asset}")) > 100
        assert b"default_nb" in _get(f"{url}/api/v1/datasets")
