"""The Over time page in real headless Chromium: a file with a date column and a planted
shift; the timeline names the changed windows and shades them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

from benchmarks.bench_load import _upload
from tests.app.test_timeline_api import weekly
from tests.ui.browser import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_over_time_journey(server, browser, tmp_path) -> None:
    path = tmp_path / "weekly.csv"
    weekly().to_csv(path, index=False)
    dataset = _upload(SimpleNamespace(url=server), path)  # type: ignore[arg-type]
    browser.get(f"{server}/over-time?dataset={dataset}")
    wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
    title = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#time-graph .gtitle").text)
    assert "6 of 13 windows changed against 2026-03-02" in title
    status = browser.find_element(By.ID, "time-status").text
    assert status.startswith("Calibration changed in 6: 2026-04-27/2026-05-03")
    shaded = browser.execute_script(  # one shaded span per changed window, on every panel
        "return document.querySelector('#time-graph .js-plotly-plot').layout.shapes"
        ".map(s => s.x0)")
    assert sorted(set(shaded)) == [7.5, 8.5, 9.5, 10.5, 11.5, 12.5]
    assert "fitted on the window before" in browser.find_element(
        By.CSS_SELECTOR, "#time-rolling .legend").text
    # by month the same shift shows in fewer, larger windows
    browser.find_element(By.CSS_SELECTOR, "#time-freq input[value='M']").click()
    wait.until(lambda b: "per month" in b.find_element(By.CSS_SELECTOR,
                                                       "#time-graph .gtitle").text)
