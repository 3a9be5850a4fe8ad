"""The recalibration advice weighs NLL and Brier, and the calibration errors, so it never
crowns a method on one score that the rest of the table contradicts.

The file reproduces a decision tree's probabilities of a rare purchase: step-shaped
(one value per leaf), 40% of them exactly 0 with a few purchases among those rows. NLL
charges each such purchase 27.6 nats, so temperature scaling, which pulls every
probability towards the middle, lowers NLL while ECE, smooth ECE, kCE and Brier all get
worse on the same held-out rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.services.comparison import Candidate, compare
from app.services.recommendation import score_shape
from calibcore.recalibration import REGISTRY
from tests.app.test_api import upload

CALIBRATION_ERRORS = ("ece", "smooth_ece", "laplace_kernel_calibration_error")
TEMPERATURE = "Temperature scaling"
ISOTONIC = "Isotonic regression"


def tree_predictions(n_rows: int = 3000, seed: int = 0) -> pd.DataFrame:
    """An overgrown tree's leaf frequencies as probabilities of a rare purchase."""
    rng = np.random.default_rng(seed)
    visits = rng.integers(0, 40, n_rows)
    minutes = rng.gamma(2.0, 5.0, n_rows)
    leaf = np.digitize(visits, [5, 15, 25, 35]) * 3 + np.digitize(minutes, [5, 20])
    # each leaf's share of purchases among its few training rows: pure leaves give 0 and 1
    leaf_probability = np.array([0, 0, 0, 0, 0, 0.25, 0, 0.2, 0.5, 0.25, 0.5, 0.75, 0.4,
                                 1.0, 1.0])
    purchase_rate = np.array([0.005, 0.01, 0.02, 0.01, 0.02, 0.08, 0.02, 0.06, 0.2, 0.08,
                              0.2, 0.35, 0.15, 0.5, 0.6])
    bought = (rng.uniform(size=n_rows) < purchase_rate[leaf]).astype(int)
    return pd.DataFrame({"bought": bought, "p_bought": leaf_probability[leaf],
                         "visits": visits, "minutes": minutes.round(2),
                         "split": np.where(rng.uniform(size=n_rows) < 0.5, "calibration",
                                           "test")})


@pytest.fixture(scope="module")
def tree() -> pd.DataFrame:
    return tree_predictions()


@pytest.fixture
def dataset(client, tree) -> str:  # type: ignore[no-untyped-def]
    response = upload(client, tree.to_csv(index=False).encode(), "tree.csv",
                      label="bought", probabilities="p_bought")
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def compared(client, dataset: str, *methods: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    response = client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                           json={"methods": list(methods)})
    assert response.status_code == 201, response.text
    return dict(response.json()["comparison"])


def values(table: dict[str, Any], key: str) -> dict[str, float]:
    return {row["name"]: row["values"][key]["value"] for row in table["rows"]}


def test_the_file_reproduces_an_nll_that_contradicts_the_table(tree) -> None:
    scores = tree["p_bought"]
    assert (scores == 0).mean() > 0.35 and scores.nunique() <= 8
    assert tree.loc[scores == 0, "bought"].sum() >= 10  # purchases predicted at 0


def test_temperature_alone_is_not_crowned_when_it_worsens_everything_but_nll(
        client, dataset) -> None:
    table = compared(client, dataset, "temperature")
    assert values(table, "nll")[TEMPERATURE] < values(table, "nll")["uncalibrated"]
    for key in (*CALIBRATION_ERRORS, "brier"):  # every other column worse
        assert values(table, key)[TEMPERATURE] > values(table, key)["uncalibrated"], key
    advice = table["recommendation"]
    assert advice["verdict"] == "none_helps" and advice["keep_uncalibrated"]
    assert advice["id"] is None and advice["name"] == "uncalibrated"
    assert advice["worse_than_uncalibrated"] == [TEMPERATURE]
    first = advice["reasons"][0]
    assert first.startswith(f"No method fitted helps: {TEMPERATURE} makes the held-out "
                            "calibration errors (ECE, smooth ECE, kCE) and Brier worse")
    assert "lowest held-out NLL" not in " ".join(advice["reasons"])
    disagreement = advice["disagreement"]
    assert disagreement["nll_favours"] == TEMPERATURE
    assert disagreement["brier_favours"] == "uncalibrated"
    assert "without them the uncalibrated model has the lower NLL too" in disagreement["reason"]
    n_misses = int(disagreement["reason"].split(" because ")[1].split(" rows")[0])
    assert n_misses >= 5
    assert ("rows of the uncalibrated model give an outcome that happened probability 0"
            in disagreement["reason"])
    assert "punishes without bound" in disagreement["reason"]
    assert any(disagreement["reason"] in reason for reason in advice["reasons"])
    assert [item["method"] for item in advice["suggestions"]] == ["isotonic", "histogram",
                                                                  "beta"]
    assert advice["score_shape"]["step_shaped"] and advice["score_shape"]["share_certain"] > 0.3
    # the paired differences say the same as the table, for NLL and Brier alike
    difference = advice["differences"][0]
    assert difference["nll_minus_uncalibrated"][2] < 0 < difference["brier_minus_uncalibrated"][1]


def test_isotonic_is_recommended_when_better_on_brier_and_the_calibration_errors(
        client, dataset) -> None:
    table = compared(client, dataset, "temperature", "isotonic")
    for key in (*CALIBRATION_ERRORS, "brier"):
        assert values(table, key)[ISOTONIC] < values(table, key)["uncalibrated"], key
    advice = table["recommendation"]
    assert advice["verdict"] == "recommended" and advice["name"] == ISOTONIC
    assert advice["id"] == table["rows"][2]["id"] and advice["suggestions"] == []
    assert advice["worse_than_uncalibrated"] == [TEMPERATURE]
    assert advice["reasons"][0].startswith(f"{ISOTONIC} has the lowest held-out")
    assert any(reason.startswith(f"{TEMPERATURE} makes every calibration error")
               for reason in advice["reasons"])


def test_isotonic_is_recommended_even_when_nll_disagrees(tree) -> None:
    """A few held-out purchases given probability 0 by isotonic regression make NLL favour
    temperature scaling; isotonic stays advised, better on Brier and every calibration
    error, and the advice says why the two scores disagree."""
    calibration = (tree["split"] == "calibration").to_numpy()
    scores = tree["p_bought"].to_numpy()
    proba = np.column_stack([1 - scores, scores])
    labels = tree["bought"].to_numpy()
    fitted = {method: REGISTRY[method]().fit(proba[calibration], labels[calibration])
              .predict_proba(proba[~calibration]) for method in ("temperature", "isotonic")}
    held_out = labels[~calibration]
    isotonic = fitted["isotonic"].copy()
    missed = np.flatnonzero(held_out == 1)[:15]
    isotonic[missed] = [1.0, 0.0]  # certain of no purchase, for 15 purchases
    candidates = [Candidate("uncalibrated", proba[~calibration]),
                  Candidate(TEMPERATURE, fitted["temperature"], "r1", "temperature"),
                  Candidate(ISOTONIC, isotonic, "r2", "isotonic")]
    table = compare(held_out, candidates, pd.DataFrame(index=range(held_out.size)),
                    n_bootstrap=50)
    nll, brier = values(table, "nll"), values(table, "brier")
    assert nll[TEMPERATURE] < nll[ISOTONIC] < nll["uncalibrated"]
    assert brier[ISOTONIC] < brier["uncalibrated"] < brier[TEMPERATURE]
    advice = table["recommendation"]
    assert advice["verdict"] == "recommended" and advice["name"] == ISOTONIC
    assert advice["disagreement"]["nll_favours"] == TEMPERATURE
    assert advice["disagreement"]["brier_favours"] == ISOTONIC
    reason = advice["disagreement"]["reason"]
    assert reason.startswith(f"NLL and Brier disagree. NLL favours {TEMPERATURE}")
    assert (f"because 15 rows of {ISOTONIC} give an outcome that happened probability 0"
            in reason)
    assert f"without them {ISOTONIC} has the lower NLL too" in reason
    assert f"Brier, which charges a confident mistake at most 2, favours {ISOTONIC}" in reason
    assert reason in advice["reasons"]


def test_a_disagreement_within_the_noise_is_not_reported() -> None:
    """Two sets of probabilities a hair apart: NLL and Brier may each prefer a different
    one, but neither difference is beyond the bootstrap noise, so nothing is said."""
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.05, 0.95, 2000)
    labels = (rng.uniform(size=scores.size) < scores).astype(np.intp)
    nudged = np.clip(scores + rng.normal(0, 1e-4, scores.size), 0.01, 0.99)
    candidates = [Candidate("uncalibrated", np.column_stack([1 - scores, scores])),
                  Candidate("Platt scaling", np.column_stack([1 - nudged, nudged]), "r1",
                            "platt")]
    table = compare(labels, candidates, pd.DataFrame(index=range(scores.size)),
                    n_bootstrap=100)
    advice = table["recommendation"]
    assert advice["disagreement"] is None
    assert advice["verdict"] == "keep_uncalibrated" and advice["keep_uncalibrated"]
    assert advice["differences"][0]["brier_minus_uncalibrated"][1] < 0 < advice[
        "differences"][0]["brier_minus_uncalibrated"][2]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(n_rows=st.integers(1, 3_000), n_values=st.integers(1, 400),
       order=st.sampled_from(["drawn", "sorted", "one_value_first"]),
       seed=st.integers(0, 2**16))
def test_the_step_shape_is_the_exact_count_rule_whatever_the_row_order(
        n_rows, n_values, order, seed) -> None:
    # the count may stop at a leading block; the verdict must be the whole file's, also
    # when the leading rows repeat one value and the distinct ones come last
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n_values).round(6)[rng.integers(0, n_values, n_rows)]
    if order == "sorted":
        scores = np.sort(scores)
    elif order == "one_value_first":
        scores[: n_rows // 2] = scores[0]
        scores[n_rows // 2:] = rng.uniform(size=n_rows - n_rows // 2).round(6)
    proba = np.column_stack([1 - scores, scores])
    exact = np.unique(proba, axis=0).shape[0]
    limit = max(10, n_rows / 20)
    shape = score_shape(proba)
    assert shape["step_shaped"] == (exact <= limit)
    if shape["step_shaped"]:
        assert shape["n_distinct"] == exact
    else:
        assert limit < shape["n_distinct"] <= exact
