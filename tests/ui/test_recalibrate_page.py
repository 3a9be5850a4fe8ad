"""The recalibration workbench in a real browser: compare three methods, export, re-apply."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from calibcore.recalibration import Recalibrator
from tests.app.test_recalibration_advice import tree_predictions
from tests.ui.browser import WebDriverWait, upload_via_api, wait, wait_for_download

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENSHOTS = os.environ.get("CALIBDASH_SCREENSHOTS")
PROBA = [f"proba_{k}" for k in range(10)]
CORRECTED = [f"calibrated_proba_{k}" for k in range(10)]








def test_compare_three_methods_download_the_model_and_apply_it(
        server, browser, shared_data, downloads) -> None:
    digits = shared_data / "digits_svm.csv"
    dataset = upload_via_api(server, digits)
    browser.get(f"{server}/recalibrate?dataset={dataset}")
    fit = wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button")))
    wait(browser).until(lambda b: "digits_svm" in b.find_element(By.ID, "dataset-picker").text)
    wait(browser).until(lambda b: b.find_element(By.CSS_SELECTOR, "#recal-variable").text)
    for method in ("platt", "lece"):
        browser.find_element(By.CSS_SELECTOR, f"#method-select input[value='{method}']").click()
    checked = browser.find_elements(By.CSS_SELECTOR, "#method-select input:checked")
    assert sorted(box.get_attribute("value") for box in checked) == ["lece", "platt",
                                                                     "temperature"]
    fit.click()

    table = wait(browser, 120).until(ec.presence_of_element_located((By.ID, "recal-comparison")))
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    names = [row.find_element(By.CSS_SELECTOR, "td").text for row in rows]
    assert names == ["uncalibrated (n = 624)", "Temperature scaling", "Platt scaling",
                     "LECE (locally equal calibration errors)"]
    headers = table.find_element(By.TAG_NAME, "thead").text
    for label in ("ECE", "smooth ECE", "kCE", "Brier", "NLL", "accuracy", "MLCE", "max VECE"):
        assert label in headers
    assert "γ = 0.4, φ = PCA(" in headers  # the MLCE says its bandwidth and space
    assert len(table.find_elements(By.CSS_SELECTOR, "td.best")) >= 8
    assert "–" in rows[1].find_elements(By.TAG_NAME, "td")[1].text  # an interval under ECE
    progress = browser.find_elements(By.CSS_SELECTOR, "#recal-method-progress .method-row")
    assert [row.get_attribute("class").split()[-1] for row in progress] == [
        "method-temperature", "method-platt", "method-lece"]
    assert all("succeeded" in row.text for row in progress)
    advice = browser.find_element(By.ID, "recal-recommendation-card").text
    assert advice.startswith("Recommendation:") and "NLL" in advice
    assert "test rows" in browser.find_element(By.ID, "fit-status").text
    wait(browser).until(lambda b: len(b.find_elements(
        By.CSS_SELECTOR, "#recal-graph .scatterlayer .trace")) >= 5)
    assert not browser.find_element(By.ID, "recal-view-control").is_displayed()  # 10 classes

    wait(browser).until(ec.element_to_be_clickable(  # a callback chained on the results
        (By.CSS_SELECTOR, "#recal-downloads li.download-temperature a.download-model"))).click()
    model_path = wait_for_download(downloads, "digits_svm-temperature-model.json")
    document = json.loads(model_path.read_text())
    assert document["method"] == "temperature"
    # with a split there is one choice of corrected scores: the exported model's
    item = browser.find_element(By.CSS_SELECTOR, "#recal-downloads li.download-temperature")
    assert "corrected by the exported model: CSV · Parquet" in item.text
    assert "cross-fitted" not in item.text
    assert not browser.find_elements(By.CSS_SELECTOR, "#recal-downloads a.download-crossfitted-csv")

    browser.find_element(By.ID, "apply-model-file").send_keys(str(model_path))
    browser.find_element(By.ID, "apply-data-file").send_keys(str(digits))
    assert browser.find_element(By.ID, "apply-model-name").text == model_path.name
    assert browser.find_element(By.ID, "apply-data-name").text == "digits_svm.csv"
    browser.find_element(By.ID, "apply-button").click()
    corrected_path = wait_for_download(downloads, "digits_svm-calibrated.csv", 60)
    wait(browser).until(lambda b: "downloaded digits_svm-calibrated.csv" in b.find_element(
        By.ID, "apply-status").text)

    corrected = pd.read_csv(corrected_path)
    original = pd.read_csv(digits)
    assert list(corrected.columns) == [*original.columns, *CORRECTED] and len(corrected) == 1197
    proba = original[PROBA].to_numpy()
    expected = Recalibrator.from_json(document).predict_proba(
        proba / proba.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(corrected[CORRECTED].to_numpy(), expected, rtol=0, atol=1e-12)


def test_apply_panel_reports_a_rejected_file(server, browser, shared_data, tmp_path) -> None:
    browser.get(f"{server}/recalibrate")
    wait(browser).until(ec.element_to_be_clickable((By.ID, "apply-button")))
    model = tmp_path / "not-a-model.json"
    model.write_text(json.dumps({"format": "pickle"}))
    browser.find_element(By.ID, "apply-model-file").send_keys(str(model))
    browser.find_element(By.ID, "apply-data-file").send_keys(str(shared_data / "default_nb.csv"))
    browser.find_element(By.ID, "apply-button").click()
    status = wait(browser).until(lambda b: b.find_element(By.CSS_SELECTOR,
                                                          "#apply-status.note-error"))
    assert "not a calibdash recalibrator document" in status.text


def test_without_a_split_both_downloads_are_offered_and_labelled(
        server, browser, shared_data, downloads, tmp_path) -> None:
    no_split = tmp_path / "digits_nosplit.csv"
    pd.read_csv(shared_data / "digits_svm.csv").drop(columns="split").to_csv(no_split,
                                                                               index=False)
    dataset = upload_via_api(server, no_split)
    browser.get(f"{server}/recalibrate?dataset={dataset}")
    fit = wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button")))
    wait(browser).until(lambda b: "digits_nosplit" in b.find_element(By.ID,
                                                                      "dataset-picker").text)
    fit.click()
    wait(browser, 120).until(ec.presence_of_element_located((By.ID, "recal-comparison")))
    assert "cross-fitting" in browser.find_element(By.ID, "fit-status").text
    item = wait(browser).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "#recal-downloads li.download-temperature")))
    lines = [line.text for line in item.find_elements(By.CSS_SELECTOR, "li")]
    assert lines == ["corrected by the exported model: CSV · Parquet",
                     "cross-fitted (what the comparison scored): CSV · Parquet",
                     "fitted recalibrator: JSON"]
    note = browser.find_element(By.CSS_SELECTOR, "#recal-downloads .download-note").text
    assert "applied to every row" in note and "the scores the comparison above measured" in note
    if SCREENSHOTS:
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", item)
        browser.save_screenshot(str(Path(SCREENSHOTS) / "recalibrate-downloads.png"))

    item.find_element(By.CSS_SELECTOR, "a.download-csv").click()
    by_model = pd.read_csv(wait_for_download(downloads,
                                             "digits_nosplit-temperature-calibrated.csv"))
    item.find_element(By.CSS_SELECTOR, "a.download-crossfitted-csv").click()
    cross_fitted = pd.read_csv(wait_for_download(
        downloads, "digits_nosplit-temperature-calibrated-crossfitted.csv"))
    item.find_element(By.CSS_SELECTOR, "a.download-model").click()
    document = json.loads(wait_for_download(
        downloads, "digits_nosplit-temperature-model.json").read_text())

    proba = by_model[PROBA].to_numpy()
    expected = Recalibrator.from_json(document).predict_proba(
        proba / proba.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(by_model[CORRECTED].to_numpy(), expected, rtol=0, atol=1e-12)
    assert len(cross_fitted) == len(by_model) == 1197
    assert np.abs(cross_fitted[CORRECTED].to_numpy() - expected).max() > 1e-4


def test_binary_comparison_is_drawn_for_the_positive_class_or_the_top_label(
        server, browser, shared_data, tmp_path) -> None:
    """Binary data: the overlaid held-out diagram opens on P(class 1) over [0, 1]; the
    top-label view (confidence from 0.5) is one click away."""
    binary = tmp_path / "default_small.csv"
    pd.read_csv(shared_data / "default_nb.csv").head(3000).to_csv(binary, index=False)
    dataset = upload_via_api(server, binary)
    browser.get(f"{server}/recalibrate?dataset={dataset}")
    fit = wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button")))
    wait(browser).until(lambda b: "default_small" in b.find_element(By.ID,
                                                                     "dataset-picker").text)
    browser.find_element(By.CSS_SELECTOR, "#method-select input[value='platt']").click()
    fit.click()
    control = wait(browser, 120).until(ec.visibility_of_element_located(
        (By.ID, "recal-view-control")))
    assert control.find_element(By.CSS_SELECTOR, "input[value='positive']").is_selected()

    def axis_title() -> str:
        return browser.find_element(By.CSS_SELECTOR, "#recal-graph .xtitle").text

    # plotly replaces the axis title's element when it redraws: a wait may find the old one
    redrawn = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))
    redrawn.until(lambda b: axis_title() == "P(y = 1) (predicted probability)")
    title = redrawn.until(lambda b: b.find_element(By.CSS_SELECTOR, "#recal-graph .gtitle").text)
    assert "positive class 1" in title and "n = 1,474" in title
    # a positive-class diagram of a rare outcome has points below 0.5
    ticks = redrawn.until(lambda b: [t.text for t in b.find_elements(
        By.CSS_SELECTOR, "#recal-graph .xtick text")])
    assert ticks[0] in ("0", "0.0")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", control)
    if SCREENSHOTS:
        browser.save_screenshot(str(Path(SCREENSHOTS) / "recalibrate-positive-class.png"))
    control.find_element(By.CSS_SELECTOR, "input[value='top_label']").click()
    redrawn.until(lambda b: axis_title() == "confidence (predicted probability)")
    redrawn.until(lambda b: "top label" in b.find_element(By.CSS_SELECTOR,
                                                          "#recal-graph .gtitle").text)


def test_a_method_that_only_lowers_nll_is_not_crowned(server, browser, tmp_path) -> None:
    """A tree's step-shaped scores: temperature scaling (the default) lowers NLL and
    worsens every other column; the card says no method helps and lists likely ones."""
    path = tmp_path / "tree_purchases.csv"
    tree_predictions().to_csv(path, index=False)
    dataset = upload_via_api(server, path)
    browser.get(f"{server}/recalibrate?dataset={dataset}")
    fit = wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button")))
    wait(browser).until(lambda b: "tree_purchases" in b.find_element(By.ID,
                                                                      "dataset-picker").text)
    checked = browser.find_elements(By.CSS_SELECTOR, "#method-select input:checked")
    assert [box.get_attribute("value") for box in checked] == ["temperature"]
    fit.click()
    card = wait(browser, 120).until(ec.presence_of_element_located(
        (By.ID, "recal-recommendation-card")))
    assert card.text.startswith("No method fitted helps: keep the uncalibrated probabilities")
    assert "Recommendation: Temperature scaling" not in card.text
    assert "worse than the uncalibrated probabilities" in card.text
    assert "NLL punishes without bound" in card.text
    suggested = [item.text for item in card.find_elements(By.CSS_SELECTOR, "li.suggestion")]
    assert [line.split(" (")[0] for line in suggested] == [
        "Isotonic regression", "Histogram binning", "Beta calibration"]
