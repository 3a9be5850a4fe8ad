"""Decision curves through REST: the route's curve is the core's on the stored rows and
Vickers & Elkin's formula by hand; malformed thresholds are a 422 a person can act on; a
recalibration's result carries its net benefit beside the uncalibrated model's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibcore.decision import decision_curve, net_benefit_difference
from tests.app.test_api import assert_error, upload


@pytest.fixture
def dataset(client, shared_data) -> str:  # type: ignore[no-untyped-def]
    return str(upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"])


def test_decision_curve_equals_the_core_and_the_formula(client, dataset, shared_data) -> None:
    response = client.get(f"/api/v1/datasets/{dataset}/decision",
                          params={"thresholds": "0.02, 0.05,0.1,0.2,0.5", "subset": "test",
                                  "n_bootstrap": 150})
    assert response.status_code == 200, response.text
    body = response.json()
    frame = pd.read_csv(shared_data / "default_nb.csv")
    test = frame[frame["split"] == "test"]
    labels, scores = test["y_true"].to_numpy(), test["y_prob"].to_numpy()
    thresholds = [0.02, 0.05, 0.1, 0.2, 0.5]
    assert body["thresholds"] == thresholds and body["n"] == len(test)
    assert body["positive_class"] == "1" and body["subset"] == "test"
    n = len(test)
    by_hand = [((scores >= t) & (labels == 1)).sum() / n
               - ((scores >= t) & (labels == 0)).sum() / n * t / (1 - t) for t in thresholds]
    np.testing.assert_allclose(body["net_benefit"]["model"], by_hand, atol=1e-12)
    prevalence = labels.mean()
    assert body["prevalence"] == pytest.approx(prevalence)
    np.testing.assert_allclose(body["net_benefit"]["treat_all"],
                               [prevalence - (1 - prevalence) * t / (1 - t)
                                for t in thresholds], atol=1e-12)
    assert body["net_benefit"]["treat_none"] == [0.0] * 5
    core = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=150,
                          random_state=0)
    np.testing.assert_allclose(body["bands"]["model"]["lower"], core.lower)
    np.testing.assert_allclose(body["bands"]["model"]["upper"], core.upper)
    assert "Vickers & Elkin 2006" in body["notes"][0]


def test_default_grid_and_no_band(client, dataset) -> None:
    body = client.get(f"/api/v1/datasets/{dataset}/decision",
                      params={"n_bootstrap": 0, "class": "0"}).json()
    assert body["thresholds"][0] == 0.01 and body["thresholds"][-1] == 0.99
    assert len(body["thresholds"]) == 99 and body["positive_class"] == "0"
    assert body["bands"]["model"]["lower"] == [None] * 99
    assert body["prevalence"] > 0.9  # class 0 of default_nb: most people do not default


@pytest.mark.slow
@pytest.mark.parametrize("thresholds", [
    "0.1,abc", "0.1,1.5", "0,0.5", "1", "0.0", ",".join(["0.5"] * 201), "0.1;;0.2"])
def test_malformed_thresholds_are_422_with_a_message(client, dataset, thresholds: str) -> None:
    """The query's pattern (in the OpenAPI document) admits exactly the lists that are
    answered; anything else is refused before any work, saying what is expected."""
    response = client.get(f"/api/v1/datasets/{dataset}/decision",
                          params={"thresholds": thresholds})
    body = assert_error(response, 422, "invalid_request")
    assert "strictly between 0 and 1 separated by commas" in body["message"]


def test_thresholds_are_sorted_and_repeats_dropped(client, dataset) -> None:
    response = client.get(f"/api/v1/datasets/{dataset}/decision",
                          params={"thresholds": "0.3, .2,0.30", "n_bootstrap": 0})
    assert response.status_code == 200, response.text
    assert response.json()["thresholds"] == [0.2, 0.3]


def test_other_refusals(client, dataset) -> None:
    # a well-formed request this dataset cannot answer: 409
    assert_error(client.get(f"/api/v1/datasets/{dataset}/decision", params={"class": "7"}),
                 409, "unknown_class")
    assert_error(client.get(f"/api/v1/datasets/{dataset}/decision",
                            params={"n_bootstrap": 5000}), 422)
    assert_error(client.get(f"/api/v1/datasets/{dataset}/decision",
                            params={"subset": "nope"}), 422)
    assert_error(client.get("/api/v1/datasets/nope/decision"), 404)


def test_recalibration_result_carries_its_net_benefit(client, dataset, shared_data) -> None:
    response = client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                           json={"methods": ["platt", "isotonic"], "n_bootstrap": 60,
                                 "thresholds": [0.1, 0.2, 0.3]})
    assert response.status_code == 201, response.text
    body = response.json()
    net = body["net_benefit"]
    assert net["thresholds"] == [0.1, 0.2, 0.3] and len(net["methods"]) == 2
    frame = pd.read_csv(shared_data / "default_nb.csv")
    test = (frame["split"] == "test").to_numpy()
    labels, scores = frame["y_true"].to_numpy()[test], frame["y_prob"].to_numpy()[test]
    assert net["n"] == test.sum()
    for entry, fitted in zip(net["methods"], body["recalibrations"], strict=True):
        assert entry["id"] == fitted["id"]
        corrected = client.get(f"/api/v1/recalibrations/{fitted['id']}/download",
                               params={"format": "csv"})
        table = pd.read_csv(pd.io.common.BytesIO(corrected.content))
        after = table["calibrated_proba_1"].to_numpy()[test]
        core = net_benefit_difference(labels, scores, after, thresholds=[0.1, 0.2, 0.3],
                                      n_bootstrap=60, random_state=0)
        np.testing.assert_allclose(entry["net_benefit"], core.candidate, atol=1e-9)
        np.testing.assert_allclose(entry["difference"], core.difference, atol=1e-9)
        np.testing.assert_allclose(entry["lower"], core.lower, atol=1e-9)
        np.testing.assert_allclose(net["uncalibrated"], core.reference, atol=1e-9)
    # the same at other thresholds, for the stored recalibrations
    ids = ",".join(entry["id"] for entry in net["methods"])
    later = client.get(f"/api/v1/datasets/{dataset}/recalibrations/net-benefit",
                       params={"ids": ids, "thresholds": "0.2,0.3", "n_bootstrap": 60})
    assert later.status_code == 200, later.text
    assert later.json()["thresholds"] == [0.2, 0.3]
    for before, after in zip(net["methods"], later.json()["methods"], strict=True):
        np.testing.assert_allclose(after["net_benefit"], before["net_benefit"][1:], atol=1e-12)
    assert_error(client.get(f"/api/v1/datasets/{dataset}/recalibrations/net-benefit",
                            params={"ids": "rc_nope"}), 404)
    assert_error(client.get(f"/api/v1/datasets/{dataset}/recalibrations/net-benefit",
                            params={"ids": ids, "thresholds": "0.2,x"}), 422,
                 "invalid_request")
    refused = client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                          json={"method": "platt", "thresholds": [0.3, 0.1]})
    assert "increase" in assert_error(refused, 422, "invalid_thresholds")["message"]
    assert_error(client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                             json={"method": "platt", "thresholds": [1.5]}), 422)
