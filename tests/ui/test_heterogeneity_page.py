"""The Heterogeneity page in headless Chromium against a real server with default_nb loaded."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from tests.ui.browser import text_of, wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]






def test_hh_heatmap_and_support_histogram_render(server, browser) -> None:
    browser.get(server + "/overview")
    wait(browser).until(lambda b: "default_nb" in text_of(b, "#dataset-picker"))
    # the navigation is rendered by its own callback, which may answer after the picker
    wait(browser).until(ec.element_to_be_clickable((By.LINK_TEXT, "Heterogeneity"))).click()
    wait(browser).until(lambda b: "Compute HH" in text_of(b, "#hh-results"))
    assert "evaluate all 3,474 test rows" in text_of(browser, "#hh-results")
    # before starting: what the settings will cost, for HH and for support
    wait(browser).until(lambda b: "local forests" in text_of(b, "#hh-run-cost"))
    assert "Estimated time" in text_of(browser, "#hh-run-cost")
    wait(browser).until(lambda b: "proximity forests" in text_of(b, "#support-run-cost"))
    every_row = browser.find_element(By.CSS_SELECTOR, "#hh-all-rows input")
    assert every_row.is_selected()  # a file this small gets every row by default
    every_row.click()  # a sample of 20 keeps the test short
    sample = wait(browser).until(ec.element_to_be_clickable((By.ID, "hh-sample")))
    sample.send_keys(Keys.CONTROL, "a")
    sample.send_keys("20", Keys.ENTER)
    browser.find_element(By.ID, "hh-run").click()

    wait(browser).until(lambda b: b.find_element(By.ID, "hh-cancel").is_enabled())
    wait(browser, 180).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "#hh-map-graph .gtitle")))
    assert "n = 20 test rows" in text_of(browser, "#hh-map-graph .gtitle")
    assert browser.find_elements(By.CSS_SELECTOR, "#hh-map-graph canvas")  # WebGL scatter
    assert browser.find_elements(By.CSS_SELECTOR, "#hh-map-graph .colorbar")
    assert "n = 20" in text_of(browser, "#hh-confidence-graph .gtitle")
    assert "3,526" in text_of(browser, "#hh-cards")
    advice = text_of(browser, "#hh-recommendation")
    assert "mean HH" in advice and "3,526 calibration rows" in advice
    assert "HH of 20 test rows" in text_of(browser, "#hh-status")
    assert not browser.find_element(By.ID, "hh-cancel").is_enabled()

    browser.find_element(By.ID, "support-run").click()
    wait(browser, 120).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "#support-histogram .gtitle")))
    assert "n = 7,000 rows" in text_of(browser, "#support-histogram .gtitle")
    bars = browser.find_elements(By.CSS_SELECTOR, "#support-histogram .barlayer .point")
    assert len(bars) >= 10
    shift = text_of(browser, "#support-shift")
    assert "Kolmogorov-Smirnov" in shift and "KS D =" in shift and "Test rows" in shift
    rows = browser.find_elements(By.CSS_SELECTOR, "#support-table tbody tr")
    assert len(rows) == 10 and rows[0].text.startswith("test")
