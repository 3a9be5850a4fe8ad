"""The Variables page in headless Chromium against a real server with the example dataset."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from tests.ui.browser import WebDriverWait, upload_via_api

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DATA = Path("/work/shared/data/default_nb.csv")
#: Where browser tests leave screenshots to look at (CALIBDASH_SCREENSHOTS to change it).
SCREENSHOTS = Path(os.environ.get("CALIBDASH_SCREENSHOTS", "/tmp/calibdash-screenshots"))
#: The ranking grid's rows on the page shown (AG Grid keeps them in its own DOM order).
ROWS = "#var-table .ag-center-cols-container .ag-row"
VARIABLE_HEADER = "#var-table .ag-header-cell[col-id=variable] .ag-header-cell-label"
PAGING = "#var-table .ag-paging-description"
LONG_NAME = "a_rather_long_variable_name_that_wraps_in_its_cell"
#: The plotted figure's traces as the browser holds them (Dash sends numeric arrays as
#: base64 typed arrays: {"dtype": ..., "bdata": ...}).
_TRACES = """
const plot = document.querySelector('#var-curve .js-plotly-plot');
return plot && plot.data ? plot.data.map(t => ({name: t.name, x: t.x})) : null;
"""


def wait(browser, seconds: float = 40) -> WebDriverWait:  # type: ignore[no-untyped-def]
    # Dash re-renders figures and table cells, so an element found a moment ago can go stale.
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def _variable_names(browser) -> list[str]:  # type: ignore[no-untyped-def]
    """The grid's variables in the order shown."""
    rows = sorted(browser.find_elements(By.CSS_SELECTOR, ROWS),
                  key=lambda row: int(row.get_attribute("row-index")))
    return [row.find_element(By.CSS_SELECTOR, ".ag-cell[col-id=variable]").text for row in rows]


def _selected(browser) -> list[str]:  # type: ignore[no-untyped-def]
    """The variables of the highlighted (selected) rows."""
    return [row.get_attribute("row-id")
            for row in browser.find_elements(By.CSS_SELECTOR, f"{ROWS}.ag-row-selected")]


def _click_variable(browser, name: str) -> None:  # type: ignore[no-untyped-def]
    browser.find_element(By.CSS_SELECTOR,
                         f'{ROWS}[row-id="{name}"] .ag-cell[col-id=variable]').click()


def _curve_title(browser) -> str:  # type: ignore[no-untyped-def]
    titles = browser.find_elements(By.CSS_SELECTOR, "#var-curve .gtitle")
    return titles[0].text if titles else ""


def _plotted_x(browser, name: str) -> np.ndarray | None:  # type: ignore[no-untyped-def]
    """The x values of the plotted trace called ``name``, read from the figure's data."""
    for trace in browser.execute_script(_TRACES) or []:
        if trace["name"] == name:
            x = trace["x"]
            if isinstance(x, dict):
                return np.frombuffer(base64.b64decode(x["bdata"]), dtype=np.dtype(x["dtype"]))
            return np.asarray(x, dtype=float)
    return None


def _x_extent(browser) -> tuple[float, float] | None:  # type: ignore[no-untyped-def]
    x = _plotted_x(browser, "error rate")
    return None if x is None or x.size == 0 else (float(x[0]), float(x[-1]))


def _curve_subtitle(browser) -> str:  # type: ignore[no-untyped-def]
    subtitles = browser.find_elements(By.CSS_SELECTOR, "#var-curve .gtitle-subtitle")
    return subtitles[0].text if subtitles else ""


def test_ranking_table_bar_chart_and_curves(server, browser) -> None:
    browser.get(server + "/variables")
    wait(browser).until(lambda b: _variable_names(b) == ["income", "student", "balance"])
    table = browser.find_element(By.ID, "var-table").text
    assert "VECE" in table and "p-value" in table and "7,000" in table
    assert "categorical" in table and "numeric" in table
    wait(browser).until(lambda b: len(b.find_elements(
        By.CSS_SELECTOR, "#var-bars .barlayer .point")) == 3)
    assert "VECE by variable" in browser.find_element(By.CSS_SELECTOR, "#var-bars .gtitle").text
    legend = browser.find_element(By.CSS_SELECTOR, "#var-bars .legend").text
    assert "p < 0.05" in legend and "p ≥ 0.05" in legend
    status = browser.find_element(By.ID, "var-status").text
    assert "3 variables ranked on 7,000 all rows" in status

    # the top variable is plotted (and its row highlighted) first; then the user clicks balance
    wait(browser).until(lambda b: _curve_title(b).startswith("income:"))
    wait(browser).until(lambda b: _selected(b) == ["income"])
    _click_variable(browser, "balance")
    wait(browser).until(lambda b: _curve_title(b).startswith("balance: error rate"))
    assert _selected(browser) == ["balance"]
    assert "balance (numeric)" in browser.find_element(By.ID, "var-select").text
    assert "n = 7,000" in _curve_subtitle(browser)
    bands = browser.find_elements(By.CSS_SELECTOR, "#var-curve .scatterlayer path.js-fill")
    assert len(bands) == 2 and all(len(band.get_attribute("d") or "") > 100 for band in bands)
    lines = browser.find_elements(By.CSS_SELECTOR, "#var-curve .scatterlayer path.js-line")
    assert len(lines) >= 2
    assert len(browser.find_elements(By.CSS_SELECTOR, "#var-curve .barlayer .point")) == 30
    annotation = browser.find_element(By.CSS_SELECTOR, "#var-curve .annotation-text").text
    assert "v* = " in annotation and "VCE(v*) = 0.0127" in annotation
    note = browser.find_element(By.ID, "var-note").text
    assert "balance (numeric): n = 7,000" in note and "VECE = 0.0035" in note

    # accuracy & confidence instead of error rates, and a narrower span
    browser.find_elements(By.CSS_SELECTOR, "#var-scale input")[1].click()
    wait(browser).until(lambda b: _curve_title(b).startswith("balance: accuracy and confidence"))
    span_box = browser.find_element(By.CSS_SELECTOR, "#var-span input")
    span_box.send_keys(Keys.CONTROL, "a")
    span_box.send_keys("0.4", Keys.TAB)  # the slider commits its box on blur
    wait(browser).until(lambda b: "span 0.40" in _curve_subtitle(b))


def test_grid_sorts_shows_tips_and_follows_the_bar_chart(server, browser) -> None:
    browser.get(server + "/variables")
    wait(browser).until(lambda b: _variable_names(b) == ["income", "student", "balance"])
    wait(browser).until(lambda b: _selected(b) == ["income"])
    cells = {cell.get_attribute("col-id"): cell.text for cell in browser.find_elements(
        By.CSS_SELECTOR, f'{ROWS}[row-id="income"] .ag-cell')}
    assert cells["kind"] == "numeric" and cells["n"] == "7,000" and cells["n_missing"] == "0"
    assert cells["vece"] == "0.0087" and cells["p_value"] == "0.00498"  # 4 decimals; 3 digits
    significant = browser.find_element(By.CSS_SELECTOR,
                                       f'{ROWS}[row-id="income"] .ag-cell[col-id=p_value]')
    assert "significant" in significant.get_attribute("class")
    student_kind = browser.find_element(By.CSS_SELECTOR,
                                        f'{ROWS}[row-id="student"] .ag-cell[col-id=kind]')
    assert student_kind.text == "categorical"  # whole, not cut short
    assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth;",
                                  student_kind)

    # a header's tooltip says what the column measures
    header = browser.find_element(By.CSS_SELECTOR, "#var-table .ag-header-cell[col-id=vece]")
    ActionChains(browser).move_to_element(header).perform()
    tip = wait(browser, 10).until(lambda b: b.find_element(By.CSS_SELECTOR, ".ag-tooltip"))
    assert "variable-based ECE" in tip.text

    # a click on a bar draws that variable and moves the highlight to its row
    bars = browser.find_elements(By.CSS_SELECTOR, "#var-bars .barlayer .point path")
    lowest = max(bars, key=lambda bar: bar.rect["y"])  # balance: the smallest VECE, at the bottom
    ActionChains(browser).move_to_element(lowest).click().perform()
    wait(browser).until(lambda b: _curve_title(b).startswith("balance:"))
    wait(browser).until(lambda b: _selected(b) == ["balance"])

    # a click in the grid: student is drawn and its row (only) highlighted
    _click_variable(browser, "student")
    wait(browser).until(lambda b: "per category" in _curve_title(b)
                        and _curve_title(b).startswith("student:"))
    assert _selected(browser) == ["student"]

    # sorting by a header reorders the rows; the chosen one stays highlighted
    browser.find_element(By.CSS_SELECTOR, VARIABLE_HEADER).click()
    wait(browser).until(lambda b: _variable_names(b) == ["balance", "income", "student"])
    browser.find_element(By.CSS_SELECTOR, VARIABLE_HEADER).click()
    wait(browser).until(lambda b: _variable_names(b) == ["student", "income", "balance"])
    assert _selected(browser) == ["student"]
    time.sleep(0.6)  # AG Grid slides the rows to their new places (0.4 s) before the shot
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.execute_script("arguments[0].scrollIntoView(); window.scrollBy(0, -160);",
                           browser.find_element(By.ID, "var-status"))
    browser.save_screenshot(str(SCREENSHOTS / "variables-grid.png"))


def test_categorical_variable_shows_grouped_bars_and_table(server, browser) -> None:
    browser.get(server + "/variables")
    wait(browser).until(lambda b: len(_variable_names(b)) == 3)
    _click_variable(browser, "student")
    wait(browser).until(lambda b: "per category" in _curve_title(b))
    bars = browser.find_elements(By.CSS_SELECTOR, "#var-curve .barlayer .point")
    assert len(bars) == 4  # 2 categories x (error rate, predicted error)
    assert browser.find_elements(By.CSS_SELECTOR, "#var-curve .errorbar")
    categories = wait(browser).until(ec.presence_of_element_located((By.ID, "var-categories")))
    assert "4,929" in categories.text and "2,071" in categories.text
    assert "student (categorical): n = 7,000" in browser.find_element(By.ID, "var-note").text


def test_range_control_widens_the_curves_to_the_whole_variable(server, browser) -> None:
    balance = pd.read_csv(DATA)["balance"].to_numpy()
    browser.get(server + "/variables")
    wait(browser).until(lambda b: len(_variable_names(b)) == 3)
    _click_variable(browser, "balance")
    wait(browser).until(lambda b: _curve_title(b).startswith("balance: error rate"))
    low, high = np.quantile(balance, [0.05, 0.95])
    wait(browser).until(lambda b: _x_extent(b) == (pytest.approx(low), pytest.approx(high)))
    axis = "#var-curve .xtitle, #var-curve .x2title"
    assert "5th–95th percentile" in " ".join(
        e.text for e in browser.find_elements(By.CSS_SELECTOR, axis))

    ranges = browser.find_elements(By.CSS_SELECTOR, "#var-range input")
    assert [r.get_attribute("value") for r in ranges] == ["5-95", "1-99", "all"]
    ranges[2].click()  # all values: the tails come into view
    wait(browser).until(lambda b: _x_extent(b) == (pytest.approx(balance.min()),
                                                   pytest.approx(balance.max())))
    assert balance.max() > high  # (a twentieth of the balances are 0, so low is the minimum)
    assert "minimum to maximum" in " ".join(
        e.text for e in browser.find_elements(By.CSS_SELECTOR, axis))
    assert "minimum to maximum" in browser.find_element(By.ID, "var-note").text

    ranges[1].click()
    low, high = np.quantile(balance, [0.01, 0.99])
    wait(browser).until(lambda b: _x_extent(b) == (pytest.approx(low), pytest.approx(high)))


def _many_variables(path: Path) -> Path:
    """20 numeric features (one with a long name) and a model miscalibrated along one."""
    rng = np.random.default_rng(7)
    n_rows = 1000
    names = [f"feature_{i:02d}" for i in range(19)] + [LONG_NAME]
    frame = pd.DataFrame(rng.normal(size=(n_rows, len(names))), columns=names)
    truth = 1 / (1 + np.exp(-frame["feature_00"]))
    frame["label"] = (rng.random(n_rows) < truth).astype(int)
    frame["proba_1"] = np.clip(truth + 0.15 * np.tanh(frame["feature_01"]), 0.01, 0.99)
    frame["proba_0"] = 1 - frame["proba_1"]
    frame.to_csv(path / "many_variables.csv", index=False)
    return path / "many_variables.csv"


def test_a_choice_from_the_bars_or_the_dropdown_turns_the_grids_page(server, browser,
                                                                      tmp_path) -> None:
    dataset_id = upload_via_api(server, _many_variables(tmp_path))
    browser.get(f"{server}/variables?dataset={dataset_id}")
    wait(browser, 120).until(lambda b: len(_variable_names(b)) == 15)
    assert browser.find_element(By.CSS_SELECTOR, PAGING).text == "Page 1 of 2"
    first = _variable_names(browser)[0]
    wait(browser).until(lambda b: _selected(b) == [first])

    # the 18th bar from the top is the 18th variable by VECE: on the grid's second page
    bars = sorted(browser.find_elements(By.CSS_SELECTOR, "#var-bars .barlayer .point path"),
                  key=lambda bar: bar.rect["y"])
    assert len(bars) == 20
    ActionChains(browser).move_to_element(bars[17]).click().perform()
    wait(browser).until(lambda b: b.find_element(By.CSS_SELECTOR, PAGING).text == "Page 2 of 2")
    chosen = _selected(browser)
    assert len(chosen) == 1 and chosen[0] in _variable_names(browser)
    assert _variable_names(browser).index(chosen[0]) == 2  # 18th = third on page 2
    wait(browser).until(lambda b: _curve_title(b).startswith(f"{chosen[0]}:"))

    # the dropdown: the top variable, back on the first page
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});",
                           browser.find_element(By.ID, "var-select"))
    browser.find_element(By.ID, "var-select").click()
    # typed: the open list scrolls to the chosen option, hiding the first under its search box
    wait(browser).until(lambda b: b.find_element(By.CSS_SELECTOR, ".dash-dropdown-search")) \
        .send_keys(first)
    wait(browser).until(lambda b: next((o for o in b.find_elements(By.CSS_SELECTOR, "[role=option]")
                                        if o.text.startswith(f"{first} (")), False)).click()
    wait(browser).until(lambda b: b.find_element(By.CSS_SELECTOR, PAGING).text == "Page 1 of 2")
    wait(browser).until(lambda b: _selected(b) == [first])
    wait(browser).until(lambda b: _curve_title(b).startswith(f"{first}:"))

    # a long name wraps inside its cell (first by name) rather than widen the grid or be cut
    header = browser.find_element(By.CSS_SELECTOR, VARIABLE_HEADER)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", header)
    header.click()
    wait(browser).until(lambda b: _variable_names(b)[0].replace("\n", "") == LONG_NAME)
    long_cell, short_cell = (browser.find_element(
        By.CSS_SELECTOR, f'{ROWS}[row-id="{name}"] .ag-cell[col-id=variable]')
        for name in (LONG_NAME, "feature_00"))
    assert long_cell.rect["height"] > 1.5 * short_cell.rect["height"]  # two lines or more
    assert browser.execute_script(
        "const v = document.querySelector('#var-table .ag-center-cols-viewport');"
        "return v.scrollWidth <= v.clientWidth;")
