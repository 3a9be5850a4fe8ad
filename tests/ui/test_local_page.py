"""The Local page in headless Chromium against a real server: a UMAP landscape of digits_svm."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from tests.ui.browser import choose, text_of, upload_via_api, wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]










def test_umap_landscape_cdf_and_curves_render(server, browser, shared_data) -> None:
    dataset = upload_via_api(server, shared_data / "digits_svm.csv")
    browser.get(f"{server}/local?dataset={dataset}")
    wait(browser).until(lambda b: "digits_svm" in text_of(b, "#dataset-picker"))
    wait(browser).until(lambda b: "1,197 rows." in text_of(b, "#local-status"))
    assert text_of(browser, "#local-gamma-text") == "γ = 0.4"  # PCA's default
    choose(browser, "local-reducer", "UMAP")
    # the user's gamma stays (a silently changed gamma would move the MLCE); the hint names
    # UMAP's default
    wait(browser).until(lambda b: "the default for this φ is 0.2" in text_of(
        b, "#local-gamma-hint"))
    assert text_of(browser, "#local-gamma-text") == "γ = 0.4"
    browser.find_element(By.ID, "local-run").click()

    wait(browser).until(lambda b: b.find_element(By.ID, "local-cancel").is_enabled())
    wait(browser, 240).until(lambda b: "n = 1,197 rows" in text_of(b, "#local-map .gtitle"))
    title = text_of(browser, "#local-map .gtitle")
    assert "LCE landscape, all confidence bins" in title and "UMAP map, γ = 0.4" in title
    assert browser.find_elements(By.CSS_SELECTOR, "#local-map canvas")  # WebGL scatter
    assert "LCE" in text_of(browser, "#local-map .colorbar")
    assert "UMAP 1" in text_of(browser, "#local-map .xtitle")
    assert "n = 1,197" in text_of(browser, "#local-cdf .gtitle")
    assert browser.find_elements(By.CSS_SELECTOR, "#local-cdf .scatterlayer .trace")
    wait(browser, 240).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "#local-curves .gtitle")))
    assert "MLCE and mean LCE against γ (n = 1,197 rows, d = 2)" in text_of(
        browser, "#local-curves .gtitle")
    legend = text_of(browser, "#local-curves .legend")
    assert "MCE (γ → ∞ limit of MLCE)" in legend and "ECE (γ → ∞ limit of mean LCE)" in legend
    wait(browser).until(lambda b: "ready" in text_of(b, "#local-status"))
    assert not browser.find_element(By.ID, "local-cancel").is_enabled()
    cards = text_of(browser, "#local-cards")
    assert "MLCE" in cards and "n = 1,197 rows" in cards
    assert "γ = 0.4, φ = 2-D UMAP" in cards  # every MLCE says its bandwidth and space
    assert "compare MLCEs only at the same γ" in text_of(browser, "#local-results")

    # Another gamma recomputes the LCE on the cached embedding, and the curve marks it.
    thumb = browser.find_element(By.CSS_SELECTOR, "#local-gamma [role=slider]")
    thumb.send_keys(*[Keys.ARROW_RIGHT] * 10)
    wait(browser).until(lambda b: text_of(b, "#local-gamma-text") != "γ = 0.4")
    gamma = text_of(browser, "#local-gamma-text").removeprefix("γ = ")
    wait(browser, 60).until(lambda b: f"UMAP map, γ = {gamma}," in text_of(
        b, "#local-map .gtitle"))
    wait(browser).until(lambda b: f"landscape's γ = {gamma}" in text_of(b, "#local-curves "
                                                                        ".legend"))

    choose(browser, "local-bin", "bin 15")
    wait(browser).until(lambda b: "confidence bin 15" in text_of(b, "#local-cdf .gtitle"))
    assert "the bin's |conf − acc|" in text_of(browser, "#local-cdf .legend")
    assert "confidence bin 15" in text_of(browser, "#local-map .gtitle")
    browser.find_element(By.CSS_SELECTOR, "#local-colour input[value='signed']").click()
    wait(browser).until(lambda b: "signed LCE" in text_of(b, "#local-map .colorbar"))

    drag = browser.find_element(By.CSS_SELECTOR, "#local-map .nsewdrag")
    width, height = drag.size["width"], drag.size["height"]
    ActionChains(browser).move_to_element_with_offset(drag, -width // 2 + 2, -height // 2 + 2) \
        .click_and_hold().move_by_offset(width - 4, height - 4).release().perform()
    wait(browser).until(lambda b: b.find_elements(By.CSS_SELECTOR,
                                                  "#local-selection-table .ag-row"))
    in_bin = int(text_of(browser, "#local-map .gtitle").split("(n = ")[1].split(" ")[0])
    selected = int(text_of(browser, "#local-selection").split(" rows selected")[0])
    assert selected == in_bin > 0  # the box covers the bin
    # a paged grid: the summary counts every listed row, the page shows ten, LCE descending
    summary = text_of(browser, "#local-selection-table .ag-paging-row-summary-panel")
    assert summary.replace(",", "").endswith(f"of {in_bin}"), summary
    lce = [float(cell.text) for cell in browser.find_elements(
        By.CSS_SELECTOR, "#local-selection-table .ag-center-cols-container [col-id=lce]")]
    assert len(lce) == min(in_bin, 10) and lce == sorted(lce, reverse=True)
