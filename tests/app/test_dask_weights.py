"""``calibdash report FILES --engine dask --weight COL`` (and ``--negative-rate``): the
Dask report of weighted rows equals the in-memory weighted report of the same rows, and
says what it weighs. Files of 2,000 rows in three Parquet parts, on the session's
LocalCluster."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dask.distributed import LocalCluster

from app.cli import main
from calibcore.metrics import global_measures

N_ROWS = 2_000
#: The measures both reports compute exactly from the same weighted rows.
EXACT = ("ece", "mce", "classwise_ece", "brier", "binary_brier", "nll", "accuracy",
         "binned_ece_plus_width", "interval_calibration_error",
         "laplace_kernel_calibration_error", "smooth_ece")


@pytest.fixture(scope="module")
def scheduler(dask_cluster: LocalCluster) -> str:
    return str(dask_cluster.scheduler_address)


def files(folder: Path, weights: np.ndarray) -> Path:
    """P(class 1) ~ Beta(2, 2), y ~ Bernoulli(p ** 1.3), a feature and ``weights`` in
    ``w``: three Parquet parts (one of them empty) and the same rows as one CSV."""
    rng = np.random.default_rng(9)
    positive = rng.beta(2, 2, N_ROWS)
    frame = pd.DataFrame({"y_true": (rng.random(N_ROWS) < positive**1.3).astype(int),
                          "y_prob": positive, "age": rng.normal(50, 10, N_ROWS),
                          "w": weights})
    folder.mkdir()
    for number, rows in enumerate(np.split(np.arange(N_ROWS), [700, 700])):
        frame.iloc[rows].to_parquet(folder / f"part-{number}.parquet", index=False)
    frame.to_csv(folder / "all.csv", index=False)
    return folder


def report(scheduler: str, *arguments: str, out: Path) -> dict:  # type: ignore[type-arg]
    assert main(["report", *arguments, "--n-bootstrap", "10", "--out", str(out)]
                + (["--engine", "dask", "--scheduler", scheduler, "--html",
                    str(out.with_suffix(".html"))] if arguments[0].endswith("*.parquet")
                   else [])) == 0
    return dict(json.loads(out.read_text()))


@pytest.mark.parametrize("kind", ["integer", "fractional+negative_rate"])
def test_the_dask_weighted_report_is_the_in_memory_weighted_report(
        scheduler, tmp_path, capsys, kind: str) -> None:
    rng = np.random.default_rng(2)
    weights = (rng.integers(0, 4, N_ROWS).astype(float) if kind == "integer"
               else rng.gamma(0.8, 1.5, N_ROWS))
    folder = files(tmp_path / "logs", weights)
    extra = ["--weight", "w", *(["--negative-rate", "0.5"] if "negative" in kind else [])]
    dask_report = report(scheduler, str(folder / "*.parquet"), *extra,
                         out=tmp_path / "dask.json")
    memory = report(scheduler, str(folder / "all.csv"), *extra, out=tmp_path / "memory.json")
    assert dask_report["engine"] == "dask" and dask_report["roles"]["weight"] == "w"
    assert dask_report["negative_rate"] == memory["negative_rate"]
    # Kish's n by hand, and the in-memory report's caption
    frame = pd.read_csv(folder / "all.csv")
    applied = weights * (np.where(frame["y_true"] == 0, 2.0, 1.0) if "negative" in kind
                         else 1.0)
    assert dask_report["n_eff"] == pytest.approx(applied.sum() ** 2 / np.sum(applied**2),
                                                 rel=1e-12)
    assert dask_report["weights_note"] == memory["weights_note"]
    assert dask_report["weights_note"].startswith("weighted (Kish n_eff")
    for view in ("positive", "top_label"):
        got = dask_report["views"][view]["metrics_by_subset"]["all"]
        assert got["weighted"] is True and got["weights_note"] == memory["weights_note"]
        expected = (memory["metrics"] if view == memory["view"] else None)
        if expected is None:
            continue
        for key in EXACT:
            assert got["measures"][key]["plug_in"] == pytest.approx(
                expected["measures"][key]["plug_in"], abs=1e-9), (view, key)
    # the brier score by hand
    brier = np.average((frame["y_prob"] - frame["y_true"]) ** 2, weights=applied)
    assert dask_report["metrics"]["measures"]["binary_brier"]["plug_in"] == pytest.approx(
        brier, rel=1e-12)
    # the binned diagram's weighted rates and Kish-size intervals
    for ours, theirs in zip(dask_report["reliability"]["diagrams"],
                            memory["reliability"]["diagrams"], strict=True):
        assert ours["count"] == theirs["count"]
        for field in ("observed", "observed_low", "observed_high"):
            assert np.allclose(np.array(ours[field], dtype=float),
                               np.array(theirs[field], dtype=float), atol=1e-12,
                               equal_nan=True), field
    # the variables ranking is weighted too: the in-memory weighted VECE of each variable
    assert dask_report["variables"]["weighted"] is True
    assert dask_report["variables"]["weights_note"] == memory["weights_note"]
    assert "equal-weight bins" in dask_report["variables"]["note"]
    vece = {row["variable"]: row["vece"] for row in memory["variables"]["variables"]}
    assert vece and {row["variable"] for row in dask_report["variables"]["variables"]} == set(vece)
    for row in dask_report["variables"]["variables"]:
        assert row["vece"] == pytest.approx(vece[row["variable"]], rel=1e-9, abs=1e-12)
    # the equal-mass ECE at the weighted quantiles of every row
    equal_mass = global_measures(frame["y_true"], frame["y_prob"], view="positive",
                                 binning="equal_mass", n_bootstrap=0, sample_weight=applied,
                                 measures=["ece", "mce", "classwise_ece"])
    for key in ("ece", "mce", "classwise_ece"):
        assert dask_report["metrics"]["equal_mass"][key] == pytest.approx(
            equal_mass[key].value, abs=1e-9), key
    page = (tmp_path / "dask.html").read_text()
    assert f"Row weights: {dask_report['weights_note']}." in page
    assert "Kish n_eff" in capsys.readouterr().out


@pytest.mark.slow
def test_unit_weights_give_the_unweighted_dask_report(scheduler, tmp_path) -> None:
    folder = files(tmp_path / "logs", np.ones(N_ROWS))
    weighted = report(scheduler, str(folder / "*.parquet"), "--weight", "w",
                      out=tmp_path / "weighted.json")
    plain = report(scheduler, str(folder / "*.parquet"), "--features", "age",
                   out=tmp_path / "plain.json")
    assert weighted["weighted"] is True and weighted["n_eff"] == pytest.approx(N_ROWS)
    assert plain["weighted"] is False and "n_eff" not in plain
    assert plain["roles"]["weight"] is None
    for key, item in plain["metrics"]["measures"].items():
        ours = weighted["metrics"]["measures"][key]
        for field in ("plug_in", "low", "high"):
            if item[field] is None:
                assert ours[field] is None, (key, field)
            else:
                assert ours[field] == pytest.approx(item[field], abs=1e-12), (key, field)
    # the weighted test pools the scores into cells of width 1/8,192 (each at its mean
    # score) where the unweighted one keeps every distinct score of 2,000 rows
    assert weighted["metrics"]["calibration_test"]["statistic"] == pytest.approx(
        plain["metrics"]["calibration_test"]["statistic"], rel=1e-6)
