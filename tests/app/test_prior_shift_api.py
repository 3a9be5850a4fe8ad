"""The prior-shift recalibrator through REST and the CLI: the rate as a parameter, the
downloaded probabilities equal to p / (p + (1 - p) / r), bad rates refused."""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.cli import main as cli_main
from tests.app.test_api import assert_error, upload
from tests.app.test_recalibration_api import download, fit


def test_rest_fit_and_download_apply_the_formula(client, shared_data) -> None:
    frame = pd.read_csv(shared_data / "default_nb.csv")
    dataset = upload(client, frame.to_csv(index=False).encode(), "default_nb.csv").json()["id"]
    result = fit(client, dataset, method="prior_shift", params={"negative_rate": 0.25})
    assert result["params"] == {"negative_rate": 0.25, "negative_class": 0}
    q = frame["y_prob"].to_numpy()
    downloaded = download(client, result["id"])
    np.testing.assert_allclose(downloaded["calibrated_proba_1"], q / (q + (1 - q) / 0.25),
                               rtol=1e-12, atol=1e-15)
    url = f"/api/v1/datasets/{dataset}/recalibrations"
    error = assert_error(client.post(url, json={"method": "prior_shift",
                                                "params": {"negative_rate": -2}}),
                         422, "invalid_parameters")
    assert "negative_rate must be a positive number" in error["message"]


def test_cli_takes_the_rate_as_a_parameter(shared_data, tmp_path) -> None:
    out = tmp_path / "out.csv"
    assert cli_main(["recalibrate", str(shared_data / "default_nb.csv"), "--method",
                     "prior_shift", "--params", '{"negative_rate": 0.5}', "--out",
                     str(out)]) == 0
    written = pd.read_csv(out)
    q = written["y_prob"].to_numpy()
    np.testing.assert_allclose(written["calibrated_proba_1"], q / (q + (1 - q) / 0.5),
                               rtol=1e-9)
