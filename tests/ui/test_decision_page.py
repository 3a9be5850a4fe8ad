"""The Decision curves page in real headless Chromium on the example dataset: the figure
draws the model with its band, treat all and treat none, under its title; narrowing the
threshold range redraws it on the narrower grid."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.ui.browser import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TRACES = """
const data = document.querySelector('#decision-graph .js-plotly-plot').data;
return data.map(t => [t.name, t.x.filter(x => x !== null).length, t.fill || '']);
"""


def test_decision_curves_journey(server, browser) -> None:
    browser.get(f"{server}/decision")
    wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
    title = wait.until(lambda b: b.find_element(By.CSS_SELECTOR,
                                                "#decision-graph .gtitle").text)
    assert title.startswith("Decision curve: net benefit of acting on P(1)")
    assert "n = 7,000 rows" in title
    traces = browser.execute_script(TRACES)
    names = [name for name, _, _ in traces]
    assert {"model", "treat all", "treat none"} <= set(names)
    band = next(t for t in traces if t[0].startswith("model: 95% bootstrap band"))
    assert band[2] == "toself" and band[1] > 0
    lengths = {name: length for name, length, _ in traces}
    assert lengths["model"] == lengths["treat all"] == lengths["treat none"] == 99
    axes = browser.find_element(By.CSS_SELECTOR, "#decision-graph").text
    assert "threshold probability" in axes and "net benefit" in axes
    status = browser.find_element(By.ID, "decision-status").text
    assert "The model's band lies above treat all and treat none at" in status
    # the threshold range's upper end typed in: 0.01 .. 0.5, 50 thresholds
    upper = browser.find_element(By.CSS_SELECTOR, "#decision-range .dash-range-slider-max-input")
    upper.send_keys(Keys.CONTROL, "a")
    upper.send_keys("0.5", Keys.TAB)
    wait.until(lambda b: {name: length for name, length, _ in b.execute_script(TRACES)}
               .get("model") == 50)
    shortened = {name: length for name, length, _ in browser.execute_script(TRACES)}
    assert shortened["treat all"] == shortened["treat none"] == 50


def test_recalibrate_page_says_whether_recalibration_changes_decisions(server, browser) -> None:
    browser.get(f"{server}/recalibrate")
    wait = WebDriverWait(browser, 90, ignored_exceptions=(StaleElementReferenceException,))
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR,
                                         "#method-select input[value='isotonic']"))
    browser.find_element(By.CSS_SELECTOR, "#method-select input[value='isotonic']").click()
    browser.find_element(By.ID, "fit-button").click()  # temperature (default) and isotonic
    table = wait.until(lambda b: b.find_element(By.ID, "recal-decision-table").text)
    header = table.splitlines()[0]
    assert header.endswith("t = 0.1 t = 0.2 t = 0.3")
    assert "uncalibrated (n = 3,474)" in table and "Isotonic regression" in table
    assert table.count("of decisions changed") == 6 and table.count("Δ") == 6
    # thresholds typed out of order are sorted; a bad one is refused in words
    field = browser.find_element(By.ID, "recal-thresholds")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("0.3, 0.05", Keys.ENTER)
    wait.until(lambda b: b.find_element(By.ID, "recal-decision-table").text.splitlines()[0]
               .endswith("t = 0.05 t = 0.3"))
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("0.1, 2", Keys.ENTER)
    wait.until(lambda b: "strictly between 0 and 1" in b.find_element(By.ID,
                                                                      "recal-decision").text)
