"""The overview page in real headless Chromium: measures with intervals, the test of
calibration, both diagrams, and the bin-count control."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from tests.ui.browser import WebDriverWait

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
                                "resamples, positive-class view): p = ")
    assert "no evidence of miscalibration at the 5% level" in test_line
    assert "Checked in the top-label view: p = " in test_line  # and it agrees there
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


def test_a_binary_model_that_over_predicts_is_flagged_in_the_positive_view(
        server, browser, tmp_path) -> None:
    """The planted file (P(y = 1) runs high by about 0.08): the Overview opens in the
    positive-class view and warns; the top-label view is a click away and shows the folded
    ECE, while the verdict stays the positive view's; the Variables page says why its
    top-label curves can look calibrated."""
    from types import SimpleNamespace

    from benchmarks.bench_load import _upload
    from tests.app.test_binary_view import planted_frame

    path = tmp_path / "planted.csv"
    planted_frame(False).to_csv(path, index=False)
    dataset = _upload(SimpleNamespace(url=server), path)  # type: ignore[arg-type]
    browser.get(f"{server}/overview?dataset={dataset}")
    wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
    checked = "#view-select input[value='{}']"
    wait.until(lambda b: b.find_element(By.CSS_SELECTOR, checked.format("positive"))
               .is_selected())
    note = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#calibration-test.note-warning"))
    wait.until(lambda b: "p =" in b.find_element(By.ID, "calibration-test").text
               or "p ≤" in b.find_element(By.ID, "calibration-test").text)
    text = browser.find_element(By.ID, "calibration-test").text
    assert "positive-class view" in text and "unlikely to be calibrated" in text
    assert "Checked in the top-label view" in text and note.is_displayed()
    assert "positive-class view" in browser.find_element(By.ID, "overview-note").text
    ece_positive = float(wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#measure-ece")
                                    .text.split()[1]))
    assert ece_positive > 0.05
    browser.find_element(By.CSS_SELECTOR, checked.format("top_label")).click()
    wait.until(lambda b: "top-label view" in b.find_element(By.ID, "overview-note").text)
    wait.until(lambda b: float(b.find_element(By.CSS_SELECTOR, "#measure-ece")
                               .text.split()[1]) < 0.03)
    wait.until(lambda b: "positive-class view" in b.find_element(By.ID,
                                                                 "calibration-test").text)
    browser.save_screenshot(str(tmp_path / "overview-top-label.png"))

    browser.get(f"{server}/variables?dataset={dataset}")
    warning = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#var-view-note .note"))
    assert "0.0" in warning.text and "P(class 1)" in warning.text
    assert "note-warning" in warning.get_attribute("class")
    browser.find_element(By.CSS_SELECTOR, "#var-view input[value='positive']").click()
    wait.until(lambda b: not b.find_elements(By.CSS_SELECTOR, "#var-view-note .note"))
    wait.until(lambda b: "frequency of class 1" in b.find_element(
        By.CSS_SELECTOR, "#var-curve .gtitle").text
        or "frequency of y ≠ class 1" in b.find_element(By.CSS_SELECTOR,
                                                         "#var-curve .gtitle").text)
