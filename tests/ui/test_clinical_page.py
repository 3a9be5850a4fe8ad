"""The Clinical page in real headless Chromium: the example file's report — verdict,
curve and table — equals the REST answer; the test rows redraw it; the printable report
opens from the page's link."""

from __future__ import annotations

import json
import urllib.request
from types import SimpleNamespace

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

from benchmarks.bench_load import _upload
from tests.ui.browser import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def rest(server: str, path: str) -> dict:  # type: ignore[type-arg]
    with urllib.request.urlopen(f"{server}/api/v1{path}", timeout=60) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_clinical_journey(server, browser, shared_data) -> None:
    dataset = _upload(SimpleNamespace(url=server), shared_data / "default_nb.csv")  # type: ignore[arg-type]
    expected = rest(server, f"/datasets/{dataset}/clinical")
    browser.get(f"{server}/clinical?dataset={dataset}")
    wait = WebDriverWait(browser, 90, ignored_exceptions=(StaleElementReferenceException,))
    title = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "#clinical-graph .gtitle").text)
    assert "Flexible calibration curve of P(1)" in title and "n = 7,000" in title
    axes = browser.execute_script(
        "const l = document.querySelector('#clinical-graph .js-plotly-plot').layout;"
        "return [l.yaxis.title.text, l.xaxis2.title.text, l.yaxis2.title.text]")
    assert axes == ["observed proportion", "predicted probability", "rows"]
    legend = browser.find_element(By.CSS_SELECTOR, "#clinical-graph .legend").text
    assert "pointwise 95% band" in legend and "perfect calibration" in legend

    verdict = browser.find_element(By.ID, "clinical-verdict").text
    assert verdict.startswith(expected["verdict"][:60])
    assert "Weak: not consistent" in verdict or "Weak: consistent" in verdict
    rows = {row.find_elements(By.TAG_NAME, "td")[0].text:
            [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
            for row in browser.find_elements(By.CSS_SELECTOR, "#clinical-table tbody tr")}
    slope = expected["calibration_slope"]
    assert rows["Calibration slope"][1] == f"{slope['value']:.3f}"
    assert rows["Calibration slope"][2] == f"{slope['lower']:.3f} to {slope['upper']:.3f}"
    assert rows["ICI (Eavg)"][1] == f"{expected['ici']['value']:.4f}"
    assert rows["Hosmer-Lemeshow χ²"][1].startswith(
        f"{expected['hosmer_lemeshow']['value']:.2f} (df 8")

    # the test rows only: the same report on 3,474 rows
    browser.find_element(By.CSS_SELECTOR, "#clinical-subset input[value='test']").click()
    wait.until(lambda b: "n = 3,474" in b.find_element(By.CSS_SELECTOR,
                                                       "#clinical-graph .gtitle").text)
    link = browser.find_element(By.ID, "clinical-report-link").get_attribute("href")
    assert link.endswith(f"/api/v1/datasets/{dataset}/clinical/report.html?target=1&subset=test")
    browser.get(link)
    heading = wait.until(lambda b: b.find_element(By.TAG_NAME, "h1").text)
    assert heading == "Calibration of P(1)"
    page = browser.find_element(By.TAG_NAME, "body").text
    assert "n = 3,474" in page and "Calibration hierarchy" in page
    assert browser.find_elements(By.CSS_SELECTOR, "svg[aria-label='flexible calibration curve']")
