"""The subgroups page in real headless Chromium: run the audit, read the grid, pick a
slice and see its reliability beside all rows'."""

from __future__ import annotations

import itertools

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

from tests.ui.browser import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROWS = "#sub-grid .ag-center-cols-container .ag-row"


def test_worst_subgroups_journey(server, browser) -> None:
    browser.get(server + "/subgroups")
    wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
    wait.until(lambda b: b.find_element(By.ID, "sub-run").is_enabled())
    browser.find_element(By.ID, "sub-run").click()
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, ROWS)) == 15)  # one page
    status = browser.find_element(By.ID, "sub-status").text
    assert "slices of at least 100 of 7,000 rows tried" in status
    first = browser.find_element(By.CSS_SELECTOR, f"{ROWS}[row-index='0']")
    assert "ag-row-selected" in first.get_attribute("class")
    title = browser.find_element(By.CSS_SELECTOR, "#sub-graph .gtitle").text
    assert first.find_element(By.CSS_SELECTOR, "[col-id='slice']").text in title
    third = browser.find_element(By.CSS_SELECTOR, f"{ROWS}[row-index='2']")
    chosen = third.find_element(By.CSS_SELECTOR, "[col-id='slice']").text
    third.find_element(By.CSS_SELECTOR, "[col-id='slice']").click()
    wait.until(lambda b: chosen in b.find_element(By.CSS_SELECTOR, "#sub-graph .gtitle").text)
    legend = browser.find_element(By.CSS_SELECTOR, "#sub-graph .legend").text
    assert "all rows (n = 7,000)" in legend and "slice (n = " in legend
    gaps = [float(cell.text.replace("−", "-")) for cell in browser.find_elements(
        By.CSS_SELECTOR, f"{ROWS} [col-id='gap']")]
    assert all(abs(a) >= abs(b) for a, b in itertools.pairwise(gaps))  # worst first
