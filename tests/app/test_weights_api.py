"""Row weights through the REST API: a sample_weight column is the weight role, and the
measures of integer weights equal those of the rows repeated by their weights."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from tests.app.test_api import assert_error


def _stage_and_confirm(client, frame: pd.DataFrame, **roles):  # type: ignore[no-untyped-def]
    staged = client.post("/api/v1/uploads", files={
        "file": ("weighted.csv", frame.to_csv(index=False).encode())})
    assert staged.status_code == 201, staged.text
    upload = staged.json()
    confirmed = client.post(f"/api/v1/uploads/{upload['upload_id']}/confirm", json=roles)
    return upload, confirmed


@pytest.fixture
def weighted_frames(shared_data) -> tuple[pd.DataFrame, pd.DataFrame]:  # type: ignore[no-untyped-def]
    frame = pd.read_csv(shared_data / "default_nb.csv").head(3000)
    weights = np.random.default_rng(7).integers(0, 4, len(frame))
    weights[0] = 1
    weighted = frame.assign(sample_weight=weights)
    repeated = frame.loc[frame.index.repeat(weights)].reset_index(drop=True)
    return weighted, repeated


def test_sample_weight_is_inferred_as_the_weight_role_on_upload(client, weighted_frames) -> None:
    weighted, _ = weighted_frames
    upload, confirmed = _stage_and_confirm(client, weighted)
    assert upload["inferred"]["weight"] == "sample_weight"
    assert "sample_weight" not in upload["inferred"]["features"]
    body = confirmed.json()
    assert confirmed.status_code == 201, confirmed.text
    assert body["roles"]["weight"] == "sample_weight" and body["weighted"] is True
    assert "sample_weight" not in body["roles"]["features"]
    weights = weighted["sample_weight"].to_numpy(dtype=float)
    assert body["n_eff"] == pytest.approx(weights.sum() ** 2 / (weights ** 2).sum())


@pytest.mark.parametrize(("view", "binning"), [("positive", "equal_width"),
                                               ("top_label", "equal_mass"),
                                               ("classwise", "equal_width")])
def test_integer_weights_give_exactly_the_measures_of_the_repeated_rows(
        client, weighted_frames, view: str, binning: str) -> None:
    ids = [_stage_and_confirm(client, frame)[1].json()["id"] for frame in weighted_frames]
    params = {"view": view, "binning": binning, "n_bootstrap": 0}
    ours, theirs = (client.get(f"/api/v1/datasets/{i}/metrics", params=params).json()
                    for i in ids)
    assert ours["weighted"] is True and theirs["weighted"] is False
    assert set(ours["metrics"]) == set(theirs["metrics"]) >= {
        "ece", "mce", "classwise_ece", "binned_ece_plus_width", "brier", "binary_brier",
        "nll", "accuracy", "interval_calibration_error", "laplace_kernel_calibration_error",
        "smooth_calibration_error", "smooth_ece"}
    for key, value in theirs["metrics"].items():
        assert ours["metrics"][key] == pytest.approx(value, abs=1e-9), key
    ece = [client.get(f"/api/v1/datasets/{i}/metrics/bins", params={"view": view}).json()
           for i in ids]
    np.testing.assert_allclose(ece[0]["ece"]["equal_mass"], ece[1]["ece"]["equal_mass"],
                               atol=1e-9)


def test_weighted_overview_routes_say_so_with_kish_n_eff(client, weighted_frames) -> None:
    weighted, _ = weighted_frames
    dataset = _stage_and_confirm(client, weighted)[1].json()
    weights = weighted["sample_weight"].to_numpy(dtype=float)
    n_eff = weights.sum() ** 2 / (weights ** 2).sum()
    metrics = client.get(f"/api/v1/datasets/{dataset['id']}/metrics",
                         params={"n_bootstrap": 50}).json()
    assert metrics["n_eff"] == pytest.approx(n_eff)
    assert metrics["weights_note"] == f"weighted (Kish n_eff = {n_eff:,.0f} of 3,000 rows)"
    assert "weight" in metrics["resampling"]
    assert metrics["calibration_test"]["resampling"].startswith(("exact, weighted",
                                                                 "pooled, weighted"))
    diagram = client.get(f"/api/v1/datasets/{dataset['id']}/reliability",
                         params={"n_bootstrap": 20, "n_bins": 5}).json()
    assert diagram["weighted"] is True and diagram["weights_note"] == metrics["weights_note"]
    (binned,) = diagram["diagrams"]
    assert sum(binned["weight"]) == pytest.approx(weights.sum())
    assert sum(binned["count"]) == 3000


def test_weight_role_chosen_refused_or_turned_off_at_confirm(client, shared_data) -> None:
    frame = pd.read_csv(shared_data / "default_nb.csv").head(500)
    frame["w"] = 1.0
    frame.loc[[3, 9], "w"] = -1.0
    _, refused = _stage_and_confirm(client, frame, weight="w")
    error = assert_error(refused, 422, "invalid_weight")
    assert error["details"] == {"column": "w", "rows": [3, 9], "count": 2}
    assert "negative" in error["message"]
    frame["w"] = 2.0
    body = _stage_and_confirm(client, frame, weight="w")[1].json()
    assert body["roles"]["weight"] == "w" and "w" not in body["roles"]["features"]
    body = _stage_and_confirm(client, frame.rename(columns={"w": "weights"}),
                              no_weight=True)[1].json()
    assert body["weighted"] is False and "weights" in body["roles"]["features"]


def test_negative_rate_weights_the_negatives(client, shared_data) -> None:
    frame = pd.read_csv(shared_data / "default_nb.csv").head(2000)
    body = _stage_and_confirm(client, frame, negative_rate=0.25)[1].json()
    assert body["weighted"] is True and body["negative_rate"] == 0.25
    weights = np.where(frame["y_true"] == 0, 4.0, 1.0)
    metrics = client.get(f"/api/v1/datasets/{body['id']}/metrics",
                         params={"n_bootstrap": 0, "view": "positive"}).json()
    positive = frame["y_prob"].to_numpy()
    brier = np.average((positive - frame["y_true"]) ** 2, weights=weights)
    assert metrics["metrics"]["binary_brier"] == pytest.approx(brier, rel=1e-12)
    assert_error(_stage_and_confirm(client, frame, negative_rate=0)[1], 422)
    assert_error(_stage_and_confirm(client, frame, negative_rate=1.5)[1], 422)


def test_negative_rate_is_refused_for_more_than_two_classes(client) -> None:
    frame = pd.DataFrame({"y": [0, 1, 2, 1] * 10, "proba_0": [0.6, 0.2, 0.1, 0.3] * 10,
                          "proba_1": [0.2, 0.6, 0.1, 0.4] * 10,
                          "proba_2": [0.2, 0.2, 0.8, 0.3] * 10})
    error = assert_error(_stage_and_confirm(client, frame, negative_rate=0.5)[1], 422,
                         "invalid_negative_rate")
    assert "binary" in error["message"]


def test_weights_beyond_1e100_either_way_are_refused(client, shared_data) -> None:
    """Weights are relative, but squared sums of 1e300 overflow and of 1e-300 vanish:
    such a column is refused with the rows and the way out; weights of 1e-90 beside 1
    are measured."""
    frame = pd.read_csv(shared_data / "default_nb.csv").head(600)
    for weight, what in ((1e300, "larger than 1e+100"), (1e-300, "positive but below 1e-100")):
        extreme = frame.assign(sample_weight=np.where(np.arange(600) % 3 == 0, weight, 1.0))
        response = client.post("/api/v1/datasets", files={
            "file": ("extreme.csv", extreme.to_csv(index=False).encode())})
        message = assert_error(response, 422, "invalid_weight")["message"]
        assert what in message and "divided or multiplied by a constant" in message
    tiny = frame.assign(sample_weight=np.where(np.arange(600) % 3 == 0, 1e-90, 1.0))
    response = client.post("/api/v1/datasets", files={
        "file": ("tiny.csv", tiny.to_csv(index=False).encode())})
    assert response.status_code == 201, response.text
    dataset = response.json()["id"]
    for route in ("metrics", "reliability", "clinical"):
        assert client.get(f"/api/v1/datasets/{dataset}/{route}").status_code == 200, route
    measured = client.get(f"/api/v1/datasets/{dataset}/metrics").json()
    assert measured["n_eff"] == pytest.approx(400.0)  # the 400 rows of weight 1


def test_a_csv_written_by_pandas_round_trips_its_weights(client) -> None:
    text = "y_true,y_prob,Sample_Weight\n0,0.2,1\n1,0.8,2.5\n0,0.4,0\n1,0.6,1\n"
    staged = client.post("/api/v1/uploads", files={"file": ("w.csv", io.BytesIO(
        text.encode()))}).json()
    assert staged["inferred"]["weight"] == "Sample_Weight"


def test_the_workbench_fits_every_method_with_the_dataset_weights(client, weighted_frames) -> None:
    from calibcore.recalibration import Recalibrator, TemperatureScaling
    from calibcore.recalibration.lece import LECE

    weighted, _ = weighted_frames
    dataset = _stage_and_confirm(client, weighted)[1].json()
    response = client.post(f"/api/v1/datasets/{dataset['id']}/recalibrations",
                           json={"methods": ["temperature", "lece"]})
    assert response.status_code == 201, response.text
    temperature, lece = response.json()["recalibrations"]
    for fitted in (temperature, lece):
        assert fitted["weighted"] is True and "Kish n_eff" in fitted["weights_note"]
        assert "does not take weights" not in fitted["weights_note"]
    # the comparison table weighs the held-out rows (its MLCE too)
    comparison = response.json()["comparison"]
    assert comparison["weighted"] is True and "Kish n_eff" in comparison["weights_note"]
    calibration = weighted[weighted["split"] == "calibration"]
    labels = calibration["y_true"].to_numpy()
    scores = calibration["y_prob"].to_numpy()
    weights = calibration["sample_weight"].to_numpy(dtype=float)
    expected = TemperatureScaling().fit(scores, labels, sample_weight=weights)
    document = client.get(f"/api/v1/recalibrations/{temperature['id']}/model").json()
    assert Recalibrator.from_json(document).temperature_ == pytest.approx(  # type: ignore[attr-defined]
        expected.temperature_, rel=1e-12)
    document = client.get(f"/api/v1/recalibrations/{lece['id']}/model").json()
    served = Recalibrator.from_json(document)
    np.testing.assert_array_equal(
        served.calibration_weights_, weights[weights > 0])  # type: ignore[attr-defined]
    grid = np.linspace(0.01, 0.99, 25)
    np.testing.assert_allclose(
        served.predict_proba(grid),
        LECE().fit(scores, labels, sample_weight=weights).predict_proba(grid), atol=1e-12)
    methods = {m["method"]: m for m in client.get("/api/v1/methods").json()}
    assert all(m["supports_weights"] for m in methods.values()), methods


def test_weighted_diagnostics_say_so_and_unweighted_datasets_carry_no_note(
        client, weighted_frames) -> None:
    weighted, _ = weighted_frames
    dataset = _stage_and_confirm(client, weighted)[1].json()["id"]
    for path in ("clinical", "decision"):
        body = client.get(f"/api/v1/datasets/{dataset}/{path}").json()
        assert body["weighted"] is True, path
        assert body["weights_note"].startswith("weighted (Kish n_eff"), path
    plain = _stage_and_confirm(client, weighted.drop(columns="sample_weight"))[1].json()
    body = client.get(f"/api/v1/datasets/{plain['id']}/decision").json()
    assert body["weighted"] is False and "weights_note" not in body
