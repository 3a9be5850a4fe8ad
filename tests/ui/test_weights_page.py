"""Row weights in headless Chromium against a real server: a sample_weight column is the
weight role on the roles screen, and the Overview and the Variables page say their results
are weighted, with Kish's effective sample size."""

from __future__ import annotations

import numpy as np
import pytest
from selenium.webdriver.common.by import By

from tests.ui.test_roles_screen import (
    N_ROWS,
    chosen,
    create_dataset,
    predictions,
    upload,
    wait,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


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
