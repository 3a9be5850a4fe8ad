"""Row weights in headless Chromium against a real server: a sample_weight column is the
weight role on the roles screen, and the Overview and the Variables page say their results
are weighted, with Kish's effective sample size."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from selenium.webdriver.common.by import By

from tests.ui.browser import text_of, upload_via_api
from tests.ui.test_roles_screen import (
    N_ROWS,
    chosen,
    create_dataset,
    predictions,
    upload,
    wait,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Where browser tests leave screenshots to look at (CALIBDASH_SCREENSHOTS to change it).
SCREENSHOTS = Path(os.environ.get("CALIBDASH_SCREENSHOTS", "/tmp/calibdash-screenshots"))


def test_a_weighted_upload_gives_a_weighted_overview(server, browser, tmp_path) -> None:
    rng = np.random.default_rng(5)
    weights = rng.integers(1, 4, N_ROWS)
    path = tmp_path / "weighted.csv"
    predictions("y_true", "y_prob", income=rng.normal(size=N_ROWS).round(3),
                sample_weight=weights).to_csv(path, index=False)
    upload(browser, server, path)
    assert chosen(browser, "role-weight") == ["sample_weight"]
    assert chosen(browser, "role-features") == ["income"]
    create_dataset(browser)
    n_eff = weights.sum() ** 2 / (weights ** 2).sum()
    caption = f"weighted (Kish n_eff = {n_eff:,.0f} of {N_ROWS:,} rows)"
    title = browser.find_element(By.CSS_SELECTOR, "#reliability-graph .gtitle").text
    assert caption in title
    wait(browser, 60).until(lambda b: caption in b.find_element(By.ID, "measures-table").text)
    dataset = browser.current_url.split("dataset=")[1]
    browser.get(f"{server}/variables?dataset={dataset}")
    wait(browser, 90).until(lambda b: caption in b.find_element(By.TAG_NAME, "body").text)
    assert "weights are not applied here yet" not in browser.find_element(
        By.TAG_NAME, "body").text


@pytest.fixture(scope="module")
def weighted_nb(server: str, shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """default_nb's first 2,000 rows with integer weights 1-3, uploaded once for the
    Recalibrate and Heterogeneity journeys."""
    frame = pd.read_csv(shared_data / "default_nb.csv").head(2000)
    path = tmp_path_factory.mktemp("weighted") / "weighted_nb.csv"
    frame.assign(sample_weight=np.random.default_rng(3).integers(1, 4, len(frame))).to_csv(
        path, index=False)
    return upload_via_api(server, path)


def test_the_recalibrate_page_fits_lece_and_swc_with_the_weights(
        server, browser, weighted_nb) -> None:
    """Every method takes the dataset's weights: each result says so, none says it does not."""
    from selenium.webdriver.support import expected_conditions as ec

    dataset = weighted_nb
    browser.get(f"{server}/recalibrate?dataset={dataset}")
    fit = wait(browser).until(ec.element_to_be_clickable((By.ID, "fit-button")))
    wait(browser).until(lambda b: "weighted_nb" in b.find_element(By.ID, "dataset-picker").text)
    for method in ("lece", "swc"):
        browser.find_element(By.CSS_SELECTOR, f"#method-select input[value='{method}']").click()
    fit.click()
    wait(browser, 180).until(ec.presence_of_element_located((By.ID, "recal-comparison")))
    body = browser.find_element(By.TAG_NAME, "body").text
    for name in ("Temperature scaling", "LECE (locally equal calibration errors)",
                 "SWC (similarity-weighted)"):
        assert f"{name}: fitted and measured with the dataset's weights" in body, name
    assert "does not take weights" not in body
    note = browser.find_element(By.XPATH, "//*[contains(text(), 'LECE (locally equal "
                                "calibration errors): fitted and measured')]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", note)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "recalibrate-weighted.png"))


def test_the_local_page_computes_a_weighted_landscape(
        server, browser, shared_data, tmp_path) -> None:
    """The Local page on a weighted upload: the caption gives Kish's n_eff, no page says
    the weights are not applied, and the notes say the kernel weights take the weights."""
    frame = pd.read_csv(shared_data / "digits_svm.csv")
    weights = np.random.default_rng(8).integers(1, 4, len(frame))
    path = tmp_path / "digits_weighted.csv"
    frame.assign(sample_weight=weights).to_csv(path, index=False)
    dataset = upload_via_api(server, path)
    browser.get(f"{server}/local?dataset={dataset}")
    wait(browser).until(lambda b: "1,197 rows." in text_of(b, "#local-status"))
    browser.find_element(By.ID, "local-run").click()  # PCA(2), its default gamma 0.4
    wait(browser, 180).until(lambda b: "n = 1,197 rows" in text_of(b, "#local-map .gtitle"))
    n_eff = weights.sum() ** 2 / (weights**2).sum()
    caption = f"weighted (Kish n_eff = {n_eff:,.0f} of 1,197 rows)"
    wait(browser).until(lambda b: caption in text_of(b, "#local-results"))
    assert "weights are not applied here yet" not in browser.find_element(
        By.TAG_NAME, "body").text
    assert "n = 1,197 rows, weighted by the row weights" in text_of(browser, "#local-cards")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "local-weighted.png"))
    wait(browser).until(lambda b: "Kish n_eff" in text_of(b, "#local-cdf .gtitle"))
    assert "fraction of the weight" in text_of(browser, "#local-cdf .ytitle")
    assert caption in text_of(browser, "#local-map .gtitle")
    wait(browser).until(lambda b: caption in text_of(b, "#local-curves .gtitle"))
    graph = browser.find_element(By.ID, "local-map")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", graph)
    browser.save_screenshot(str(SCREENSHOTS / "local-weighted-map.png"))


def test_the_heterogeneity_page_says_hh_is_weighted(server, browser, weighted_nb) -> None:
    """HH of a weighted upload: the caption gives the evaluated rows' Kish n_eff, the cards
    say it, and nothing says the weights are not applied."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec

    dataset = weighted_nb
    browser.get(f"{server}/heterogeneity?dataset={dataset}")
    wait(browser).until(lambda b: "weighted_nb" in b.find_element(By.ID, "dataset-picker").text)
    wait(browser).until(lambda b: "Compute HH" in b.find_element(By.ID, "hh-results").text)
    every_row = browser.find_element(By.CSS_SELECTOR, "#hh-all-rows input")
    if every_row.is_selected():
        every_row.click()  # a sample of 40 keeps the test short
    sample = wait(browser).until(ec.element_to_be_clickable((By.ID, "hh-sample")))
    sample.send_keys(Keys.CONTROL, "a")
    sample.send_keys("40", Keys.ENTER)
    browser.find_element(By.ID, "hh-run").click()
    wait(browser, 180).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "#hh-map-graph .gtitle")))
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Row weights: weighted (Kish n_eff = " in body and "of 40 rows)" in body
    assert "Kish n_eff" in browser.find_element(By.ID, "hh-cards").text
    for graph in ("hh-map-graph", "hh-confidence-graph"):
        title = browser.find_element(By.CSS_SELECTOR, f"#{graph} .gtitle").text
        assert "n = 40 test rows, weighted: Kish n_eff = " in title, title
    assert "weights are not applied here yet" not in body
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "heterogeneity_weighted.png"))
    browser.execute_script("window.scrollTo(0, document.getElementById('hh-map-graph')"
                           ".getBoundingClientRect().top + window.scrollY - 70)")
    browser.save_screenshot(str(SCREENSHOTS / "heterogeneity_weighted_graphs.png"))
