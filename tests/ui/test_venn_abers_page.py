"""Venn-Abers on the Recalibrate page in a real browser: it is offered, it fits, and the
page states the mean interval width the REST answer has."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from tests.ui.browser import upload_via_api, wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENSHOTS = os.environ.get("CALIBDASH_SCREENSHOTS")


def test_venn_abers_is_fitted_and_its_interval_width_shown(server, browser, shared_data) -> None:
    dataset = upload_via_api(server, shared_data / "default_nb.csv")
    browser.get(f"{server}/recalibrate?dataset={dataset}")
    fit = wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button")))
    wait(browser).until(lambda b: "default_nb" in b.find_element(By.ID, "dataset-picker").text)
    box = browser.find_element(By.CSS_SELECTOR, "#method-select input[value='venn_abers']")
    assert "Venn-Abers" in browser.find_element(By.ID, "method-select").get_attribute(
        "textContent")
    box.click()
    if SCREENSHOTS:
        browser.save_screenshot(str(Path(SCREENSHOTS) / "recalibrate-venn-abers-options.png"))
    fit.click()

    table = wait(browser, 120).until(ec.presence_of_element_located((By.ID, "recal-comparison")))
    names = [row.find_element(By.CSS_SELECTOR, "td").text
             for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert names == ["uncalibrated (n = 3,474)", "Temperature scaling", "Venn-Abers"]
    note = wait(browser).until(ec.visibility_of_element_located((By.ID, "recal-interval-notes")))
    match = re.search(r"Venn-Abers: mean width .* 3,474 held-out rows, p1 − p0 = ([0-9.]+)",
                      note.text)
    assert match, note.text
    with urllib.request.urlopen(f"{server}/api/v1/datasets/{dataset}/recalibrations",
                                timeout=30) as response:
        stored = [r for r in json.loads(response.read()) if r["method"] == "venn_abers"]
    assert float(match.group(1)) == pytest.approx(stored[0]["interval_width"], abs=5e-5)
    if SCREENSHOTS:
        browser.execute_script("arguments[0].scrollIntoView();", table)
        browser.save_screenshot(str(Path(SCREENSHOTS) / "recalibrate-venn-abers.png"))
