"""A real server (``calibdash serve`` in a subprocess) and headless Chromium via Selenium."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Flags for a sandboxed, offline machine: no background network, no first-run UI.
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1400,1000")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start the app exactly as users do, with the example dataset, and wait until it answers."""
    port = _free_port()
    data_dir = tmp_path_factory.mktemp("ui-store")
    log = open(data_dir / "server.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--data-dir",
         str(data_dir)], stdout=log, stderr=subprocess.STDOUT,
        # no UMAP warm-up: each test module starts a server and it would compile each time
        env={**os.environ, "PYTHONWARNINGS": "ignore", "CALIBDASH_WARM_UP": "false"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/api/v1/health", timeout=2):
                break
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.3)
    else:
        process.kill()
        pytest.fail("server did not start in 60 s")
    if process.poll() is not None:
        log.close()
        pytest.fail("server exited: " + (data_dir / "server.log").read_text()[-2000:])
    yield url
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("Chromium/ChromeDriver missing: run ./scripts/test.sh, which installs the "
                    "Debian packages chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.add_experimental_option("prefs", {
        "download.default_directory": str(downloads), "download.prompt_for_download": False,
        "safebrowsing.enabled": False})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
