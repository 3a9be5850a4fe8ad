"""With a token set, a person signs in once and every part of the UI works.

Before, the token covered /api only: the dashboard was open to anyone, and once /api
needed it the upload and apply scripts and the download links got 401.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from tests.live_server import LiveServer, live_server
from tests.ui.browser import wait, wait_for_download

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOKEN = "browser-token-4f9a"
SCREENSHOTS = os.environ.get("CALIBDASH_SCREENSHOTS")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("signin") / "store", example=True,
                     env={"CALIBDASH_API_TOKEN": TOKEN}) as live:
        yield live


def _shot(browser, name: str) -> None:  # type: ignore[no-untyped-def]
    if SCREENSHOTS:
        browser.save_screenshot(str(Path(SCREENSHOTS) / f"{name}.png"))


def test_sign_in_then_upload_fit_download_and_apply(guarded, browser, shared_data,
                                                   downloads) -> None:
    browser.get(f"{guarded.url}/recalibrate")
    token_box = wait(browser).until(ec.presence_of_element_located((By.ID, "token")))
    assert browser.current_url.endswith("/sign-in?next=%2Frecalibrate")
    assert "Sign in to calibdash" in browser.find_element(By.TAG_NAME, "h1").text
    _shot(browser, "sign-in")
    token_box.send_keys("a guess")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    problem = wait(browser).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".problem")))
    assert "not this server's token" in problem.text
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button")))
    assert browser.current_url == f"{guarded.url}/recalibrate"
    cookie = browser.get_cookie("calibdash_session")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert browser.execute_script("return document.cookie") == ""  # not readable by scripts

    # the streaming upload script (XMLHttpRequest) works with the session
    browser.get(f"{guarded.url}/")
    file_input = wait(browser).until(ec.presence_of_element_located((By.ID, "upload-file")))
    file_input.send_keys(str(shared_data / "digits_svm.csv"))
    wait(browser).until(ec.element_to_be_clickable((By.ID, "confirm-roles"))).click()
    wait(browser).until(ec.url_contains("/overview?dataset=ds_"))
    wait(browser, 40).until(lambda b: "n = 1,197" in b.find_element(
        By.CSS_SELECTOR, "#reliability-graph .gtitle").text)

    # fitting (a Dash callback and a job), then both download links
    wait(browser).until(ec.element_to_be_clickable((By.LINK_TEXT, "Recalibrate"))).click()
    wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button"))).click()
    wait(browser, 60).until(ec.presence_of_element_located((By.ID, "recal-comparison")))
    # the links come from a callback chained on the result store, just after the table
    wait(browser).until(ec.element_to_be_clickable(
        (By.CSS_SELECTOR, "#recal-downloads a.download-csv"))).click()
    corrected = pd.read_csv(wait_for_download(downloads, "*calibrated*.csv"))
    assert len(corrected) == 1197 and "calibrated_proba_0" in corrected.columns
    browser.find_element(By.CSS_SELECTOR, "#recal-downloads a.download-model").click()
    model_path = wait_for_download(downloads, "*-model.json")
    assert json.loads(model_path.read_text())["method"] == "temperature"

    # the apply script (XMLHttpRequest to /apply) too
    browser.find_element(By.ID, "apply-model-file").send_keys(str(model_path))
    browser.find_element(By.ID, "apply-data-file").send_keys(str(shared_data / "digits_svm.csv"))
    browser.find_element(By.ID, "apply-button").click()
    wait(browser, 60).until(lambda b: "downloaded" in b.find_element(By.ID, "apply-status").text)
    _shot(browser, "signed-in-recalibrate")

    # signing out closes everything again
    browser.find_element(By.ID, "sign-out").click()
    wait(browser).until(ec.presence_of_element_located((By.ID, "token")))
    browser.get(f"{guarded.url}/api/v1/datasets")
    assert browser.current_url.endswith("/sign-in?next=%2Fapi%2Fv1%2Fdatasets")
    assert "ds_" not in browser.page_source
