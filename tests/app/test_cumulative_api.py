"""The KS and Kuiper tests beside the test of calibration in the measures response: a
round trip equal to the core on the same rows and seeds, in the positive and top-label
views, and their line in the summary."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from calibcore.metrics import cumulative_tests_by_view, ks_calibration_error
from tests.app.test_api import upload


@pytest.fixture
def default_nb(shared_data) -> bytes:  # type: ignore[no-untyped-def]
    return (shared_data / "default_nb.csv").read_bytes()


def test_measures_carry_ks_and_kuiper_beside_the_test(client, default_nb) -> None:  # type: ignore[no-untyped-def]
    dataset = upload(client, default_nb).json()["id"]
    response = client.get(f"/api/v1/datasets/{dataset}/metrics", params={"n_bootstrap": 50})
    assert response.status_code == 200, response.text
    test = response.json()["calibration_test"]
    frame = pd.read_csv(io.BytesIO(default_nb))
    core = cumulative_tests_by_view(frame["y_true"], frame["y_prob"], n_resamples=50,
                                    random_state=0)
    assert [(t["view"], t["key"]) for t in test["cumulative"]] == [
        ("positive", "ks"), ("positive", "kuiper"), ("top_label", "ks"), ("top_label", "kuiper")]
    for served, expected in zip(test["cumulative"], core, strict=True):
        assert served["statistic"] == pytest.approx(expected.statistic, rel=1e-12)
        assert served["p_value"] == expected.p_value
        assert served["statistic_name"] == expected.statistic_name
        assert served["rejected"] == (expected.p_value <= 0.05)
    assert test["cumulative"][0]["statistic"] == pytest.approx(
        ks_calibration_error(frame["y_true"], frame["y_prob"], view="positive"), rel=1e-12)
    assert test["cumulative_summary"].startswith(
        "KS and Kuiper tests of the cumulative curve (Gupta et al. 2021; 50 resamples): "
        "positive-class view: KS ")
    assert "top-label view: KS" in test["cumulative_summary"]


def test_a_planted_miscalibration_is_rejected_in_the_positive_view(client) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    p = rng.beta(2, 2, 3000)
    frame = pd.DataFrame({"y_true": (rng.uniform(size=3000) < p**1.3).astype(int),
                          "y_prob": p})
    dataset = upload(client, frame.to_csv(index=False).encode()).json()["id"]
    test = client.get(f"/api/v1/datasets/{dataset}/metrics",
                      params={"n_bootstrap": 50}).json()["calibration_test"]
    positive = [t for t in test["cumulative"] if t["view"] == "positive"]
    assert len(positive) == 2 and all(t["rejected"] for t in positive)
    assert all(t["p_value"] == pytest.approx(1 / 51) for t in positive)
    assert "p ≤ 0.020" in test["cumulative_summary"]


@pytest.mark.slow
def test_the_dask_report_gives_the_in_memory_ks_and_kuiper_tests_and_intervals(
        shared_data) -> None:  # type: ignore[no-untyped-def]
    import dask
    import dask.dataframe as dd

    from app.services.diagnostics import calibration_test
    from app.services.report import partitioned_report, partitioned_roles
    from app.services.roles import RoleOverrides

    frame = pd.read_csv(shared_data / "default_nb.csv")
    parts = dd.from_pandas(frame, npartitions=3)
    with dask.config.set(scheduler="synchronous"):
        report = partitioned_report(parts, partitioned_roles(parts, RoleOverrides()),
                                    n_bootstrap=20, interval="clopper_pearson")
    memory = calibration_test(frame["y_true"].to_numpy(),
                              np.column_stack([1 - frame["y_prob"], frame["y_prob"]]),
                              n_resamples=20)
    served = report["metrics"]["calibration_test"]
    assert served["cumulative_summary"] == memory["cumulative_summary"]
    assert [t["p_value"] for t in served["cumulative"]] == [
        t["p_value"] for t in memory["cumulative"]]
    (diagram,) = report["reliability"]["diagrams"]
    (expected,) = binned_reliability_of(frame)
    assert diagram["interval"] == "clopper_pearson"
    assert np.allclose(np.array(diagram["observed_high"], dtype=float), expected.observed_high,
                       atol=1e-12, equal_nan=True)


def binned_reliability_of(frame: pd.DataFrame) -> list:  # type: ignore[type-arg]
    from calibcore.metrics import binned_reliability

    return binned_reliability(frame["y_true"], frame["y_prob"], view="positive",
                              interval="clopper_pearson")
