"""The Overview's per-bin interval control and the KS and Kuiper tests beside the test of
calibration, in real headless Chromium on the example dataset."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from tests.ui.browser import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Upper half-widths of the binned diagram's error bars, as plotted.
BAR_WIDTHS = """
const data = document.querySelector('#reliability-graph .js-plotly-plot').data;
const points = data.find(t => t.error_y && t.error_y.array);
return points.error_y.array.map((up, i) => up + points.error_y.arrayminus[i]);
"""


def test_clopper_pearson_widens_the_bars_and_ks_kuiper_sit_beside_the_test(
        server, browser, tmp_path) -> None:
    browser.get(server + "/overview")
    wait = WebDriverWait(browser, 90, ignored_exceptions=(StaleElementReferenceException,))
    title = (By.CSS_SELECTOR, "#reliability-graph .gtitle")
    wait.until(ec.presence_of_element_located(title))
    wait.until(lambda b: "95% Wilson intervals" in b.find_element(*title).text)
    wilson = browser.execute_script(BAR_WIDTHS)
    # the test of calibration arrives with the intervals, the cumulative tests with it
    table = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#cumulative-tests"))
    rows = wait.until(lambda b: [row.text for row in b.find_elements(
        By.CSS_SELECTOR, "#cumulative-tests tbody tr")])
    assert [row.split(" view")[0] for row in rows] == ["positive-class", "top-label"]
    for row in rows:  # "positive-class view 0.0026 (p = 0.2xx) 0.0039 (p = 0.0xx)"
        values = row.split(" view ")[1].split(") ")
        assert len(values) == 2 and all("(p " in value for value in values)
        assert 0 < float(values[0].split()[0]) <= float(values[1].split()[0]) < 0.05
    header = table.find_element(By.CSS_SELECTOR, "thead").text
    assert "KS calibration error" in header and "Kuiper statistic" in header

    browser.find_element(By.CSS_SELECTOR,
                         "#interval-select input[value='clopper_pearson']").click()
    wait.until(lambda b: "95% Clopper-Pearson intervals" in b.find_element(*title).text)
    exact = browser.execute_script(BAR_WIDTHS)
    assert len(exact) == len(wilson) and all(e > w for e, w in zip(exact, wilson, strict=True))
    legend = " ".join(e.text for e in browser.find_elements(
        By.CSS_SELECTOR, "#reliability-graph .legendtext"))
    assert "bars: 95% Clopper-Pearson" in legend
    shot = Path(os.environ.get("CALIBDASH_SCREENSHOT_DIR", tmp_path)) / "overview.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
