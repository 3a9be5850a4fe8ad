"""Real headless-Chromium journeys through the UI against a real server."""

from __future__ import annotations

import pandas as pd
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from tests.ui.browser import wait, wait_for_download

pytestmark = [pytest.mark.browser, pytest.mark.slow]






def test_example_dataset_is_ready_on_first_page(server, browser) -> None:
    browser.get(server + "/overview")
    title = wait(browser).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "#reliability-graph .gtitle")))
    wait(browser).until(lambda b: "n = 7,000" in b.find_element(
        By.CSS_SELECTOR, "#reliability-graph .gtitle").text)
    assert "reliability diagram" in title.text.lower()
    # the cards sit in a dcc.Loading that hides them (empty .text) while a callback redraws
    # the page (the dataset's default view arrives after the first drawing): wait until
    # one reading shows them whole, rather than reading twice
    wait(browser).until(lambda b: {"ECE", "n = 7,000"} <= _words(
        b.find_element(By.ID, "measure-cards").text))


def _words(text: str) -> set[str]:
    return {word for word in ("ECE", "n = 7,000") if word in text}


def test_upload_digits_see_reliability_fit_temperature_and_download(
        server, browser, shared_data, downloads) -> None:
    browser.get(server + "/")
    wait(browser).until(ec.presence_of_element_located((By.ID, "upload-browse")))
    file_input = wait(browser).until(ec.presence_of_element_located((By.ID, "upload-file")))
    file_input.send_keys(str(shared_data / "digits_svm.csv"))
    confirm = wait(browser).until(ec.element_to_be_clickable((By.ID, "confirm-roles")))
    panel = browser.find_element(By.ID, "roles-panel").text
    assert "1,197 rows" in panel and "proba_0" in panel
    assert "label" in browser.find_element(By.ID, "role-label").text
    confirm.click()

    wait(browser).until(ec.url_contains("/overview?dataset=ds_"))
    wait(browser, 40).until(lambda b: "n = 1,197" in b.find_element(
        By.CSS_SELECTOR, "#reliability-graph .gtitle").text)
    points = browser.find_elements(By.CSS_SELECTOR, "#reliability-graph .scatterlayer .point")
    assert len(points) >= 5
    assert "digits_svm" in browser.find_element(By.ID, "dataset-picker").text

    wait(browser).until(ec.element_to_be_clickable((By.LINK_TEXT, "Recalibrate"))).click()
    fit = wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button")))
    fit.click()
    table = wait(browser, 60).until(ec.presence_of_element_located((By.ID, "recal-comparison")))
    assert "Temperature scaling" in table.text and "uncalibrated (n = 624)" in table.text
    assert "test rows" in browser.find_element(By.ID, "fit-status").text

    # the links come from a callback chained on the result store, just after the table
    wait(browser).until(ec.element_to_be_clickable(
        (By.CSS_SELECTOR, "#recal-downloads a.download-csv"))).click()
    corrected = pd.read_csv(wait_for_download(downloads, "digits_svm-temperature-calibrated.csv"))
    new = [f"calibrated_proba_{k}" for k in range(10)]
    assert len(corrected) == 1197 and set(new) <= set(corrected.columns)
    assert corrected[new].sum(axis=1).sub(1).abs().max() < 1e-9
