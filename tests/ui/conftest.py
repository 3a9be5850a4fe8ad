"""A real server (``calibdash serve`` in a process of its own) and headless Chromium via
Selenium."""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live_server import free_port, start_server, wait_until_healthy

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Flags for a sandboxed, offline machine: no background network, no first-run UI.
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1400,1000")


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Start the app as users do (``calibdash serve``, forked from the preloaded app:
    :func:`tests.live_server.start_server`), with the example dataset, once per test
    process, and give its URL and the example's id."""
    port = free_port()
    data_dir = tmp_path_factory.mktemp("ui-store")
    log = data_dir / "server.log"
    process = start_server(
        ["serve", "--port", str(port), "--data-dir", str(data_dir)], log=log,
        # no UMAP warm-up: a module that embeds with UMAP pays its compile, the others do not
        env={**os.environ, "PYTHONWARNINGS": "ignore", "CALIBDASH_WARM_UP": "false"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process, log)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    (example,) = _datasets(url)
    yield url, example
    process.terminate()
    process.wait(timeout=20)


def _datasets(url: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/api/v1/datasets", timeout=30) as response:
        return [summary["id"] for summary in json.load(response)]


@pytest.fixture(scope="module")
def server(shared_server: tuple[str, str]) -> str:
    """The shared server as a fresh one looks to each test module: the datasets earlier
    modules uploaded are deleted, so the example is the only one and the pages' default."""
    url, example = shared_server
    for dataset in _datasets(url):
        if dataset != example:
            request = urllib.request.Request(f"{url}/api/v1/datasets/{dataset}",
                                             method="DELETE")
            urllib.request.urlopen(request, timeout=30).close()
    return url


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="session")
def shared_browser(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One headless Chromium per test process (each start costs a second or two)."""
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
        "download.prompt_for_download": False, "safebrowsing.enabled": False})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def browser(shared_browser, downloads: Path):  # type: ignore[no-untyped-def]
    """The shared Chromium as a new one looks to each test module: downloads go to the
    module's own folder, and no page remembers a dataset or a sign-in from earlier modules
    (a new tab, every cookie cleared)."""
    stale = shared_browser.window_handles
    shared_browser.switch_to.new_window("tab")  # a tab's sessionStorage starts empty
    for handle in stale:
        shared_browser.switch_to.window(handle)
        shared_browser.close()
    shared_browser.switch_to.window(shared_browser.window_handles[0])
    shared_browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
    shared_browser.execute_cdp_cmd("Browser.setDownloadBehavior", {
        "behavior": "allow", "downloadPath": str(downloads)})
    shared_browser.set_window_size(1400, 1000)
    return shared_browser
