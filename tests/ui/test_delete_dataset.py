"""Deleting a dataset from the Data page, in real headless Chromium: the
browser asks to confirm, then the dataset and its results are gone."""

from __future__ import annotations

import json
import urllib.request
from types import SimpleNamespace

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from benchmarks.bench_load import _upload
from tests.ui.browser import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def listed(server: str) -> list[str]:
    with urllib.request.urlopen(f"{server}/api/v1/datasets") as response:
        return [d["id"] for d in json.load(response)]


def test_delete_asks_then_removes_the_dataset(server, browser, shared_data) -> None:
    dataset = _upload(SimpleNamespace(url=server), shared_data / "default_nb.csv")  # type: ignore[arg-type]
    browser.get(server + "/")
    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))
    rows = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#dataset-list tbody tr"))
    before = len(rows)
    rows[0].find_element(By.TAG_NAME, "button").click()  # the newest is listed first
    wait.until(ec.alert_is_present())
    alert = browser.switch_to.alert
    assert "cannot be undone" in alert.text
    alert.dismiss()  # cancelled: nothing happens
    assert dataset in listed(server)
    browser.find_elements(By.CSS_SELECTOR, "#dataset-list tbody tr")[0].find_element(
        By.TAG_NAME, "button").click()
    wait.until(ec.alert_is_present())
    browser.switch_to.alert.accept()
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#dataset-list tbody tr"))
               == before - 1)
    assert dataset not in listed(server)


def test_heterogeneity_says_which_rows_each_section_uses_without_a_split(
        server, browser, shared_data, tmp_path) -> None:
    """Without a split column HH evaluates a seeded half of the rows and
    support uses every row; the page says so, with the half's size."""
    import pandas as pd

    path = tmp_path / "no_split.csv"
    pd.read_csv(shared_data / "default_nb.csv").drop(columns="split").to_csv(path, index=False)
    dataset = _upload(SimpleNamespace(url=server), path)  # type: ignore[arg-type]
    browser.get(f"{server}/heterogeneity?dataset={dataset}")
    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))
    hint = wait.until(lambda b: next((e.text for e in b.find_elements(
        By.CSS_SELECTOR, "#hh-results .note") if "No split column" in e.text), False))
    assert "evaluate all 3,500 test rows" in hint and "support below uses every row" in hint
