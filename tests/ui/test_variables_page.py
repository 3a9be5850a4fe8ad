"""The Variables page in headless Chromium against a real server with the example dataset."""

from __future__ import annotations

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def wait(browser, seconds: float = 40) -> WebDriverWait:  # type: ignore[no-untyped-def]
    # Dash re-renders figures and table cells, so an element found a moment ago can go stale.
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def _variable_cells(browser):  # type: ignore[no-untyped-def]
    return browser.find_elements(By.CSS_SELECTOR, "#var-table td[data-dash-column=variable]")


def _click_variable(browser, name: str) -> None:  # type: ignore[no-untyped-def]
    cell = next(c for c in _variable_cells(browser) if c.text == name)
    cell.click()


def _curve_title(browser) -> str:  # type: ignore[no-untyped-def]
    titles = browser.find_elements(By.CSS_SELECTOR, "#var-curve .gtitle")
    return titles[0].text if titles else ""


def _curve_subtitle(browser) -> str:  # type: ignore[no-untyped-def]
    subtitles = browser.find_elements(By.CSS_SELECTOR, "#var-curve .gtitle-subtitle")
    return subtitles[0].text if subtitles else ""


def test_ranking_table_bar_chart_and_curves(server, browser) -> None:
    browser.get(server + "/variables")
    wait(browser).until(lambda b: [c.text for c in _variable_cells(b)]
                        == ["income", "student", "balance"])
    table = browser.find_element(By.ID, "var-table").text
    assert "VECE" in table and "p-value" in table and "7,000" in table
    assert "categorical" in table and "numeric" in table
    wait(browser).until(lambda b: len(b.find_elements(
        By.CSS_SELECTOR, "#var-bars .barlayer .point")) == 3)
    assert "VECE by variable" in browser.find_element(By.CSS_SELECTOR, "#var-bars .gtitle").text
    legend = browser.find_element(By.CSS_SELECTOR, "#var-bars .legend").text
    assert "p < 0.05" in legend and "p ≥ 0.05" in legend
    status = browser.find_element(By.ID, "var-status").text
    assert "3 variables ranked on 7,000 all rows" in status

    # the top variable is plotted first; then the user clicks balance
    wait(browser).until(lambda b: _curve_title(b).startswith("income:"))
    _click_variable(browser, "balance")
    wait(browser).until(lambda b: _curve_title(b).startswith("balance: error rate"))
    assert "n = 7,000" in _curve_subtitle(browser)
    bands = browser.find_elements(By.CSS_SELECTOR, "#var-curve .scatterlayer path.js-fill")
    assert len(bands) == 2 and all(len(band.get_attribute("d") or "") > 100 for band in bands)
    lines = browser.find_elements(By.CSS_SELECTOR, "#var-curve .scatterlayer path.js-line")
    assert len(lines) >= 2
    assert len(browser.find_elements(By.CSS_SELECTOR, "#var-curve .barlayer .point")) == 30
    annotation = browser.find_element(By.CSS_SELECTOR, "#var-curve .annotation-text").text
    assert "v* = " in annotation and "VCE(v*) = 0.0127" in annotation
    note = browser.find_element(By.ID, "var-note").text
    assert "balance (numeric): n = 7,000" in note and "VECE = 0.0035" in note

    # accuracy & confidence instead of error rates, and a narrower span
    browser.find_elements(By.CSS_SELECTOR, "#var-scale input")[1].click()
    wait(browser).until(lambda b: _curve_title(b).startswith("balance: accuracy and confidence"))
    span_box = browser.find_element(By.CSS_SELECTOR, "#var-span input")
    span_box.send_keys(Keys.CONTROL, "a")
    span_box.send_keys("0.4", Keys.TAB)  # the slider commits its box on blur
    wait(browser).until(lambda b: "span 0.40" in _curve_subtitle(b))


def test_categorical_variable_shows_grouped_bars_and_table(server, browser) -> None:
    browser.get(server + "/variables")
    wait(browser).until(lambda b: len(_variable_cells(b)) == 3)
    _click_variable(browser, "student")
    wait(browser).until(lambda b: "per category" in _curve_title(b))
    bars = browser.find_elements(By.CSS_SELECTOR, "#var-curve .barlayer .point")
    assert len(bars) == 4  # 2 categories x (error rate, predicted error)
    assert browser.find_elements(By.CSS_SELECTOR, "#var-curve .errorbar")
    categories = wait(browser).until(ec.presence_of_element_located((By.ID, "var-categories")))
    assert "4,929" in categories.text and "2,071" in categories.text
    assert "student (categorical): n = 7,000" in browser.find_element(By.ID, "var-note").text
