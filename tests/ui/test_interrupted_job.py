"""A page whose job was running when the server was killed says so once the server is back,
and lets the user run it again (headless Chromium against a real server process)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from tests.app.test_job_persistence import _serve, _upload
from tests.live_server import free_port
from tests.ui.browser import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_hh_panel_shows_an_interrupted_job_and_enables_run(
        browser, tmp_path: Path, shared_data: Path) -> None:
    port, data_dir, log = free_port(), tmp_path / "store", tmp_path / "server.log"
    server = _serve(port, data_dir, log)
    try:
        _upload(f"http://127.0.0.1:{port}/api/v1", (shared_data / "default_nb.csv").read_bytes())
        browser.get(f"http://127.0.0.1:{port}/overview")
        wait = WebDriverWait(browser, 60)
        wait.until(lambda b: "default_nb" in b.find_element(By.ID, "dataset-picker").text)
        # the navigation is rendered by its own callback, which may answer after the picker
        wait.until(ec.element_to_be_clickable((By.LINK_TEXT, "Heterogeneity"))).click()
        wait.until(lambda b: "Compute HH" in b.find_element(By.ID, "hh-results").text)
        assert browser.find_element(By.CSS_SELECTOR, "#hh-all-rows input").is_selected()
        browser.find_element(By.ID, "hh-run").click()
        wait.until(lambda b: "local forests" in b.find_element(By.ID, "hh-status").text)
        assert not browser.find_element(By.ID, "hh-run").is_enabled()  # one run at a time

        os.kill(server.pid, signal.SIGKILL)
        server.wait(10)
        server = _serve(port, data_dir, log)  # the page keeps polling the same job id

        wait.until(lambda b: "run it again" in b.find_element(By.ID, "hh-status").text)
        status = browser.find_element(By.ID, "hh-status").text
        assert status.startswith("HH: the server restarted while this job ran")
        assert browser.find_element(By.ID, "hh-run").is_enabled()
        assert not browser.find_element(By.ID, "hh-cancel").is_enabled()
    finally:
        server.kill()
        server.wait(10)
