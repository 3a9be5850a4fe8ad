"""The roles screen in headless Chromium against a real server: roles
inferred from unusual names, and a role picked by hand updating the rest of the screen."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec

from tests.ui.browser import WebDriverWait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

N_ROWS = 300


def wait(browser: WebDriver, seconds: float = 30) -> WebDriverWait:
    return WebDriverWait(browser, seconds)


def text_of(browser: WebDriver, element_id: str) -> str:
    return str(browser.find_element(By.ID, element_id).text)


def chosen(browser: WebDriver, dropdown_id: str) -> list[str]:
    """The values shown in a dropdown (textContent: long lists overflow out of sight)."""
    return [str(item.get_attribute("textContent")) for item in browser.find_elements(
        By.CSS_SELECTOR, f"#{dropdown_id} .dash-dropdown-value-item")]


def predictions(label: str, probability: str, **features: object) -> pd.DataFrame:
    """A binary label, a probability that tracks it, then the features."""
    rng = np.random.default_rng(16)
    outcome = rng.integers(0, 2, N_ROWS)
    score = np.clip(0.3 + 0.4 * outcome + rng.normal(0, 0.15, N_ROWS), 0.01, 0.99)
    return pd.DataFrame({label: outcome, probability: score.round(4), **features})


def upload(browser: WebDriver, server: str, path: Path) -> None:
    browser.get(server + "/")
    file_input = wait(browser).until(ec.presence_of_element_located((By.ID, "upload-file")))
    file_input.send_keys(str(path))
    wait(browser).until(ec.element_to_be_clickable((By.ID, "confirm-roles")))
    wait(browser).until(lambda b: path.name in text_of(b, "roles-panel"))


def choose(browser: WebDriver, dropdown_id: str, value: str) -> None:
    browser.find_element(By.ID, dropdown_id).click()
    option = wait(browser).until(lambda b: next(
        (o for o in b.find_elements(By.CSS_SELECTOR, "[role=option]") if o.text.strip() == value),
        False))
    option.click()
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)


def create_dataset(browser: WebDriver) -> None:
    browser.find_element(By.ID, "confirm-roles").click()
    wait(browser).until(ec.url_contains("/overview?dataset=ds_"))
    wait(browser, 40).until(lambda b: f"n = {N_ROWS:,}" in b.find_element(
        By.CSS_SELECTOR, "#reliability-graph .gtitle").text)


def test_a_target_and_its_probability_are_inferred_from_unusual_names(
        server, browser, tmp_path) -> None:
    rng = np.random.default_rng(3)
    path = tmp_path / "flights.csv"
    predictions("delayed", "p_delayed", distance=rng.integers(100, 3000, N_ROWS),
                dep_hour=rng.integers(5, 23, N_ROWS),
                carrier=rng.choice(["AA", "DL", "UA"], N_ROWS)).to_csv(path, index=False)
    upload(browser, server, path)
    assert chosen(browser, "role-label") == ["delayed"]
    assert chosen(browser, "role-probabilities") == ["p_delayed"]
    assert chosen(browser, "role-features") == ["distance", "dep_hour", "carrier"]
    assert text_of(browser, "role-messages") == ""  # no banner, no guess
    assert not browser.find_element(By.ID, "role-drop-missing-field").is_displayed()
    # the Name field is tall enough for a line of text: a 16 px input clipped underscores
    font, text_height = browser.execute_script(
        "const e = document.getElementById('role-name'); const s = getComputedStyle(e);"
        "return [parseFloat(s.fontSize), e.getBoundingClientRect().height"
        " - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom)];")
    assert text_height >= 1.15 * font  # room for descenders
    create_dataset(browser)


def test_a_guess_is_said_as_one(server, browser, tmp_path) -> None:
    path = tmp_path / "guess.csv"
    predictions("bought", "q", age=np.arange(N_ROWS) % 60 + 18).to_csv(path, index=False)
    upload(browser, server, path)
    assert chosen(browser, "role-label") == ["bought"]
    assert chosen(browser, "role-probabilities") == ["q"]
    assert chosen(browser, "role-features") == ["age"]
    messages = browser.find_element(By.ID, "role-messages")
    assert messages.text.startswith("guessed: label 'bought' and probability 'q'")
    assert not messages.find_elements(By.CSS_SELECTOR, ".note-error")


def test_a_label_picked_by_hand_clears_the_banner_and_leaves_the_features(
        server, browser, tmp_path) -> None:
    rng = np.random.default_rng(4)
    path = tmp_path / "shop.csv"
    frame = predictions("bought", "score", age=rng.integers(18, 80, N_ROWS),
                        member=rng.integers(0, 2, N_ROWS), visits=rng.integers(0, 30, N_ROWS))
    frame[["age", "bought", "member", "score", "visits"]].to_csv(path, index=False)
    upload(browser, server, path)
    # two 0/1 columns: no guess; score is found by its name and its values
    assert "No label column found" in text_of(browser, "role-messages")
    assert chosen(browser, "role-probabilities") == ["score"]
    assert chosen(browser, "role-features") == ["age", "bought", "member", "visits"]

    choose(browser, "role-label", "member")
    wait(browser).until(lambda b: text_of(b, "role-messages") == "")
    assert chosen(browser, "role-features") == ["age", "bought", "visits"]
    choose(browser, "role-label", "bought")  # changed mind: member returns to the features
    wait(browser).until(lambda b: chosen(b, "role-features") == ["age", "member", "visits"])
    assert text_of(browser, "role-messages") == ""
    create_dataset(browser)


def test_rows_missing_a_probability_are_left_out_on_request(server, browser, tmp_path) -> None:
    path = tmp_path / "gaps.csv"
    frame = predictions("y_true", "y_prob", age=np.arange(N_ROWS) % 60 + 18)
    frame.loc[[3, 50, 120, 200, 299], "y_prob"] = np.nan
    frame.to_csv(path, index=False)
    upload(browser, server, path)
    tick = browser.find_element(By.ID, "role-drop-missing-field")
    assert tick.is_displayed()
    assert tick.text == "leave out the 5 rows with a missing label or probability"
    browser.find_element(By.ID, "confirm-roles").click()
    refused = wait(browser).until(lambda b: text_of(b, "confirm-status"))
    assert "'y_prob'" in refused and "rows 3, 50, 120, 200, 299" in refused
    assert "Tick “leave out the rows with a missing label or probability”" in refused
    tick.find_element(By.CSS_SELECTOR, "input[value='drop_missing']").click()
    browser.find_element(By.ID, "confirm-roles").click()
    wait(browser).until(ec.url_contains("/overview?dataset=ds_"))
    note = wait(browser, 40).until(lambda b: text_of(b, "overview-note"))
    assert "295 rows (5 left out: missing label or probability)" in note
    assert "295 rows, 5 left out" in text_of(browser, "dataset-picker")
