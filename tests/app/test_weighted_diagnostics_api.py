"""Row weights through REST in the decision curve, the clinical report, the subgroup
audit, the model comparison, the timeline and the variables ranking and curves: on an
upload with a ``sample_weight`` column each says ``weighted: true`` with Kish's n_eff, and
its weighted quantities equal those of the same file with every row repeated by its
(integer) weight."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.app.test_api import upload
from tests.app.test_compare_api import three_models_csv
from tests.app.test_subgroups_api import finished
from tests.app.test_timeline_api import weekly


def _pair(client, frame: pd.DataFrame, seed: int = 7) -> tuple[str, str, float]:  # type: ignore[no-untyped-def]
    """Dataset ids of ``frame`` with integer weights and of its rows repeated by them,
    and Kish's n_eff of the weights."""
    weights = np.random.default_rng(seed).integers(0, 4, len(frame))
    weights[:3] = 1
    weighted = frame.assign(sample_weight=weights)
    repeated = frame.loc[frame.index.repeat(weights)].reset_index(drop=True)
    ids = []
    for table in (weighted, repeated):
        response = upload(client, table.to_csv(index=False).encode())
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids[0], ids[1], float(weights.sum() ** 2 / (weights**2).sum())


@pytest.fixture
def default_pair(client, shared_data) -> tuple[str, str, float]:  # type: ignore[no-untyped-def]
    return _pair(client, pd.read_csv(shared_data / "default_nb.csv").head(2500))


def _weighted(body: dict, n_eff: float) -> None:  # type: ignore[type-arg]
    assert body["weighted"] is True, body.get("weights_note")
    assert body["n_eff"] == pytest.approx(n_eff, rel=1e-9)
    assert body["weights_note"].startswith("weighted (Kish n_eff")


def test_decision_curve(client, default_pair) -> None:  # type: ignore[no-untyped-def]
    weighted, repeated, n_eff = default_pair
    ours, theirs = (client.get(f"/api/v1/datasets/{i}/decision",
                               params={"n_bootstrap": 0}).json() for i in (weighted, repeated))
    _weighted(ours, n_eff)
    assert theirs["weighted"] is False
    for key in ("model", "treat_all"):
        np.testing.assert_allclose(ours["net_benefit"][key], theirs["net_benefit"][key],
                                   atol=1e-9)
    assert ours["prevalence"] == pytest.approx(theirs["prevalence"], abs=1e-12)
    banded = client.get(f"/api/v1/datasets/{weighted}/decision",
                        params={"n_bootstrap": 50}).json()
    assert any("carrying its weight" in note for note in banded["notes"])


def test_clinical_report(client, default_pair) -> None:  # type: ignore[no-untyped-def]
    weighted, repeated, n_eff = default_pair
    ours, theirs = (client.get(f"/api/v1/datasets/{i}/clinical").json()
                    for i in (weighted, repeated))
    _weighted(ours, n_eff)
    for name in ("oe_ratio", "calibration_in_the_large", "calibration_intercept",
                 "calibration_slope", "spiegelhalter_z"):
        for end in ("value", "lower", "upper"):
            if end in theirs[name]:
                assert ours[name][end] == pytest.approx(theirs[name][end], abs=1e-9), name
    assert ours["hosmer_lemeshow"]["value"] == pytest.approx(
        theirs["hosmer_lemeshow"]["value"], abs=1e-9)
    assert ours["unweighted"] == ["curve", "ici", "e50", "e90", "emax"]
    assert "lowess takes no weights" in ours["unweighted_note"]
    page = client.get(f"/api/v1/datasets/{weighted}/clinical/report.html")
    assert page.status_code == 200 and "ICI (Eavg) (rows unweighted)" in page.text
    assert "Kish n_eff" in page.text


def test_subgroups(client, default_pair) -> None:  # type: ignore[no-untyped-def]
    weighted, repeated, n_eff = default_pair
    results = []
    for dataset in (weighted, repeated):
        response = client.post(f"/api/v1/datasets/{dataset}/subgroups",
                               json={"features": ["student"], "min_support": 50,
                                     "pairs": False})
        assert response.status_code == 202, response.text
        job = finished(client, response.json()["job_id"])
        assert job["status"] == "succeeded", job
        results.append(job["result"])
    ours, theirs = results
    _weighted(ours, n_eff)
    by_slice = {s["slice"]: s for s in theirs["subgroups"]}
    assert len(ours["subgroups"]) == len(by_slice) >= 2
    for subgroup in ours["subgroups"]:
        other = by_slice[subgroup["slice"]]
        assert subgroup["gap"] == pytest.approx(other["gap"], abs=1e-12)
        assert subgroup["weight"] == other["n"] and 0 < subgroup["n_eff"] <= subgroup["n"]


def test_model_comparison(client) -> None:  # type: ignore[no-untyped-def]
    weighted, repeated, n_eff = _pair(client, three_models_csv(1500))
    ours, theirs = (client.get(f"/api/v1/datasets/{i}/compare",
                               params={"n_bootstrap": 0}).json() for i in (weighted, repeated))
    _weighted(ours, n_eff)
    for mine, other in zip(ours["models"], theirs["models"], strict=True):
        for key in ("accuracy", "brier", "nll", "ece"):
            assert mine["measures"][key]["plug_in"] == pytest.approx(
                other["measures"][key]["plug_in"], abs=1e-9), key


@pytest.mark.slow
def test_timeline(client) -> None:  # type: ignore[no-untyped-def]
    frame = weekly(800)
    weights = np.random.default_rng(3).integers(0, 4, len(frame))
    weights[:3] = 1
    response = upload(client, frame.assign(sample_weight=weights).to_csv(index=False).encode())
    assert response.status_code == 201, response.text
    ours = client.get(f"/api/v1/datasets/{response.json()['id']}/timeline",
                      params={"time": "date", "freq": "M"}).json()
    _weighted(ours, float(weights.sum() ** 2 / (weights**2).sum()))
    # the repeated rows grouped by month with pandas: each window's rates and gap
    repeated = frame.loc[frame.index.repeat(weights)].assign(
        month=lambda f: pd.to_datetime(f["date"]).dt.to_period("M"),
        residual=lambda f: f["y_prob"] - f["y_true"])
    by_month = repeated.groupby("month")
    assert len(ours["windows"]) == by_month.ngroups >= 3
    for window, (_, rows) in zip(ours["windows"], by_month, strict=True):
        assert window["observed_rate"] == pytest.approx(rows["y_true"].mean(), abs=1e-9)
        assert window["mean_score"] == pytest.approx(rows["y_prob"].mean(), abs=1e-9)
        assert window["gap"] == pytest.approx(rows["residual"].mean(), abs=1e-9)
        assert window["weight"] == len(rows) and window["n_eff"] <= window["n"]


def test_variables_ranking_and_curves(client, shared_data) -> None:  # type: ignore[no-untyped-def]
    from calibcore.variable import loess_curves, rank_variables

    frame = pd.read_csv(shared_data / "default_nb.csv").head(2500)
    weighted, repeated, n_eff = _pair(client, frame)
    params = {"n_permutations": 20}
    ours, theirs = (client.get(f"/api/v1/datasets/{i}/variables", params=params).json()
                    for i in (weighted, repeated))
    _weighted(ours, n_eff)
    assert theirs["weighted"] is False and "weights_note" not in theirs
    assert [v["variable"] for v in ours["variables"]] == [
        v["variable"] for v in theirs["variables"]]
    for mine, copy in zip(ours["variables"], theirs["variables"], strict=True):
        assert mine["vece"] == pytest.approx(copy["vece"], abs=1e-12), mine["variable"]
        assert mine["vce_max"] == pytest.approx(copy["vce_max"], abs=1e-9), mine["variable"]
        assert mine["v_star"] == pytest.approx(copy["v_star"]), mine["variable"]
    # the REST ranking is the core's with the upload's weights, p-values included
    weights = np.random.default_rng(7).integers(0, 4, len(frame))
    weights[:3] = 1
    core = rank_variables(frame[["student", "balance", "income"]], frame["y_true"],
                          frame["y_prob"], n_permutations=20, max_categories=10,
                          sample_weight=weights)
    assert [v["variable"] for v in ours["variables"]] == core["variable"].tolist()
    np.testing.assert_allclose([v["vece"] for v in ours["variables"]], core["vece"],
                               rtol=0, atol=1e-15)
    np.testing.assert_array_equal([v["p_value"] for v in ours["variables"]], core["p_value"])
    detail, copy = (client.get(f"/api/v1/datasets/{i}/variables/balance",
                               params={"n_points": 50}).json() for i in (weighted, repeated))
    _weighted(detail, n_eff)
    assert detail["vece"] == pytest.approx(copy["vece"], abs=1e-12)
    for key in ("x", "error", "predicted_error"):
        np.testing.assert_allclose(np.asarray(detail["curves"][key], dtype=float),
                                   np.asarray(copy["curves"][key], dtype=float),
                                   rtol=0, atol=1e-9, err_msg=key)
    curves = loess_curves(frame["balance"], frame["y_true"], frame["y_prob"], n_points=50,
                          sample_weight=weights)
    np.testing.assert_allclose(np.asarray(detail["curves"]["error"], dtype=float),
                               curves.error, rtol=0, atol=1e-15)
    assert detail["bins"]["weight"] == pytest.approx(
        [float(weights.sum()) / 10] * 10, rel=0.2)  # equal shares of the weight
