"""The overview page in real headless Chromium: measures with intervals, the test of
calibration, both diagrams, and the bin-count control."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Curve points not inside their band stretch, read from the plotted figure's data.
BAND_CHECK = """
const data = document.querySelector('#smooth-graph .js-plotly-plot').data;
const band = data.find(t => t.fill === 'toself'), line = data[data.indexOf(band) + 1];
const at = new Map(line.x.map((x, i) => [x, line.y[i]]));
let outside = 0, xs = [], ys = [];
const check = () => { const half = xs.length / 2;
  for (let i = 0; i < half; i++) { const y = at.get(xs[i]);
    const high = ys[i], low = ys[xs.length - 1 - i];
    if (y === null || y === undefined || y < low - 1e-9 || y > high + 1e-9) outside++; } };
band.x.forEach((x, i) => { if (x === null) { check(); xs = []; ys = []; }
                           else { xs.push(x); ys.push(band.y[i]); } });
check();
return outside;
"""


def test_measures_table_gets_intervals_and_bins_move_only_binned_ece(server, browser) -> None:
    browser.get(server + "/overview")
    wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#measure-smooth_ece")))
    # intervals arrive from a background job; the row then shows "low – high"
    wait.until(lambda b: "–" in b.find_element(By.CSS_SELECTOR, "#measure-smooth_ece").text)
    smooth_row = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#measure-smooth_ece").text)
    assert "consistent" in smooth_row
    value, low, dash, high, plug_in = smooth_row.split()[2:7]
    assert dash == "–" and float(low) <= float(value) <= float(high)  # shown inside its interval
    assert float(plug_in) >= float(value)  # the plug-in, which resampling shows inflated
    assert "consistent" not in browser.find_element(By.CSS_SELECTOR, "#measure-ece").text
    # the test of calibration arrives with the intervals; default_nb is calibrated overall
    test_line = browser.find_element(By.CSS_SELECTOR, "#calibration-test").text
    assert test_line.startswith("Calibration test (consistency resampling on kCE, 200 "
                                "resamples, top-label view): p = ")
    assert "no evidence of miscalibration at the 5% level" in test_line
    # smooth diagram: curve, band and density traces; binned diagram with points
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR,
                                             "#smooth-graph .scatterlayer .trace")) >= 4)
    assert "bandwidth" in browser.find_element(By.CSS_SELECTOR, "#smooth-graph .gtitle").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#bins-graph .scatterlayer .trace")) >= 5
    # the band as drawn: each closed stretch holds the drawn curve between its edges
    outside = browser.execute_script(BAND_CHECK)
    assert outside == 0

    ece_before = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#measure-ece").text)
    smooth_before = smooth_row.split()[2]
    slider_input = browser.find_element(By.CSS_SELECTOR, "#bins-slider input")
    slider_input.send_keys(Keys.BACKSPACE, Keys.BACKSPACE, "40", Keys.TAB)
    wait.until(lambda b: "40 bins" in b.find_element(By.CSS_SELECTOR,
                                                      "#reliability-graph .gtitle").text)
    wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#measure-ece").text != ece_before)
    wait.until(lambda b: "–" in b.find_element(By.CSS_SELECTOR, "#measure-ece").text)
    assert wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#measure-smooth_ece").text
                      ).split()[2] == smooth_before
