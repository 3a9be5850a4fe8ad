"""The reliability endpoint's per-bin interval (interval=wilson|clopper_pearson): a round
trip equal to the core on the same rows, the interval named in the response, and the
refusal of an unknown interval in the one error shape."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibcore.metrics import binned_reliability
from tests.app.test_api import assert_error, upload


@pytest.fixture
def default_nb(shared_data) -> bytes:  # type: ignore[no-untyped-def]
    return (shared_data / "default_nb.csv").read_bytes()


def test_clopper_pearson_round_trip_equals_the_core(client, default_nb) -> None:  # type: ignore[no-untyped-def]
    dataset = upload(client, default_nb).json()["id"]
    body = client.get(f"/api/v1/datasets/{dataset}/reliability",
                      params={"n_bins": 10, "view": "positive",
                              "interval": "clopper_pearson"})
    assert body.status_code == 200, body.text
    result = body.json()
    frame = pd.read_csv(io.BytesIO(default_nb))
    (core,) = binned_reliability(frame["y_true"], frame["y_prob"], n_bins=10, view="positive",
                                interval="clopper_pearson")
    (diagram,) = result["diagrams"]
    assert result["interval"] == "clopper_pearson" and diagram["interval"] == "clopper_pearson"
    assert diagram["count"] == core.count.tolist()
    np.testing.assert_allclose(np.array(diagram["observed_low"], dtype=float),
                               core.observed_low, atol=1e-12)  # empty bins: null, NaN
    np.testing.assert_allclose(np.array(diagram["observed_high"], dtype=float),
                               core.observed_high, atol=1e-12)
    # each bin's bounds are the exact binomial interval of its hits (scipy, independent)
    for count, observed, low, high in zip(diagram["count"], diagram["observed"],
                                          diagram["observed_low"], diagram["observed_high"],
                                          strict=True):
        if count:
            exact = stats.binomtest(round(observed * count), count).proportion_ci(
                method="exact")
            assert (low, high) == pytest.approx((exact.low, exact.high), abs=1e-12)


def test_wilson_stays_the_default_and_is_narrower(client, default_nb) -> None:  # type: ignore[no-untyped-def]
    dataset = upload(client, default_nb).json()["id"]
    url = f"/api/v1/datasets/{dataset}/reliability"
    default = client.get(url, params={"n_bins": 10}).json()
    exact = client.get(url, params={"n_bins": 10, "interval": "clopper_pearson"}).json()
    assert default["interval"] == "wilson" and default["diagrams"][0]["interval"] == "wilson"
    assert default["diagrams"][0]["count"] == exact["diagrams"][0]["count"]
    widths = [(d["observed_high"] - d["observed_low"], e["observed_high"] - e["observed_low"])
              for d, e in zip(_filled(default), _filled(exact), strict=True)]
    assert all(wilson < clopper for wilson, clopper in widths)


def _filled(result: dict) -> list[dict]:  # type: ignore[type-arg]
    diagram = result["diagrams"][0]
    return [{"observed_low": low, "observed_high": high}
            for low, high, count in zip(diagram["observed_low"], diagram["observed_high"],
                                        diagram["count"], strict=True) if count]


@pytest.mark.parametrize("interval", ["beta", "exact", "", "WILSON"])
def test_an_unknown_interval_is_a_422(client, default_nb, interval: str) -> None:  # type: ignore[no-untyped-def]
    dataset = upload(client, default_nb).json()["id"]
    response = client.get(f"/api/v1/datasets/{dataset}/reliability",
                          params={"interval": interval})
    error = assert_error(response, 422)
    assert "interval" in str(error["details"])


def test_unknown_dataset_is_a_404(client) -> None:  # type: ignore[no-untyped-def]
    assert_error(client.get("/api/v1/datasets/ds_missing/reliability",
                            params={"interval": "clopper_pearson"}), 404)
