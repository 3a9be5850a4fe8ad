"""The Compare page in real headless Chromium: three models inferred from their column
names, the table of measures and paired differences, the overlaid diagrams, and a change
of reference."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

from benchmarks.bench_load import _upload
from tests.app.test_compare_api import three_models_csv
from tests.ui.browser import WebDriverWait, choose

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_compare_journey(server, browser, tmp_path) -> None:
    path = tmp_path / "models.csv"
    three_models_csv().to_csv(path, index=False)
    dataset = _upload(SimpleNamespace(url=server), path)  # type: ignore[arg-type]
    browser.get(f"{server}/compare?dataset={dataset}")
    wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))
    wait.until(lambda b: "3 models on 4,000 rows" in b.find_element(
        By.ID, "compare-status").text)
    headers = [h.text for h in browser.find_elements(By.CSS_SELECTOR,
                                                    "#compare-grid .ag-header-cell-text")]
    assert headers[:4] == ["Measure", "gbm (reference)", "lr", "lr − gbm"]
    nll = browser.find_element(By.CSS_SELECTOR, "#compare-grid .ag-row[row-index='0']").text
    assert nll.startswith("NLL")
    legend = browser.find_element(By.CSS_SELECTOR, "#compare-graph .legend").text
    assert "gbm (reference)" in legend and "lr" in legend and "nb" in legend
    choose(browser, "compare-reference", "nb")
    wait.until(lambda b: "differences to nb" in b.find_element(By.ID, "compare-status").text)
    wait.until(lambda b: "gbm − nb" in [h.text for h in b.find_elements(
        By.CSS_SELECTOR, "#compare-grid .ag-header-cell-text")])
