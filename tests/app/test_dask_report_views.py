"""``calibdash report --engine dask`` in the positive view: a binary file is reported in the
positive-class view by default, on every row, with the test of calibration checked in the
top-label view, as the in-memory report gives it. Files of 5,000 rows in two Parquet
partitions, read on a local in-process cluster."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from app.cli import main
from calibcore.metrics import calibration_tests_by_view
from tests.calibcore.metrics.test_metrics import brute_force_ece

N_ROWS = 5_000
N_RESAMPLES = 50


def planted(folder: Path, power: float, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """P(class 1) ~ Beta(2, 2), y ~ Bernoulli(p ** power) in two Parquet files: P(class 1)
    runs high for power 1.3, low for its mirror 1 / 1.3."""
    rng = np.random.default_rng(seed)
    positive = rng.beta(2, 2, N_ROWS)
    labels = (rng.random(N_ROWS) < positive**power).astype(int)
    frame = pd.DataFrame({"y_true": labels, "y_prob": positive})
    folder.mkdir()
    for number, rows in enumerate(np.array_split(np.arange(N_ROWS), 2)):
        frame.iloc[rows].to_parquet(folder / f"part-{number}.parquet", index=False)
    return labels, positive, str(folder / "*.parquet")


def report_of(files: str, out: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    assert main(["report", files, "--engine", "dask", "--n-bootstrap", str(N_RESAMPLES),
                 "--out", str(out), *extra]) == 0
    return dict(json.loads(out.read_text()))


@pytest.mark.slow
@pytest.mark.parametrize(("power", "seed"), [(1.3, 3), (1 / 1.3, 2)], ids=["high", "low"])
def test_a_binary_file_is_reported_in_the_positive_view_and_its_miscalibration_found(
        tmp_path, capsys, power: float, seed: int) -> None:
    """The top-label view folds P(class 1) at 1/2, so over-confidence on the rows
    predicted positive and under-confidence on the others cancel: its ECE is about 0.01
    where the positive view's is about 0.08. The dask report opens in the positive view,
    finds it, and checks the verdict in the top-label view (p-values equal to the
    in-memory test's, same seeds)."""
    labels, positive, files = planted(tmp_path / "logs", power, seed)
    report = report_of(files, tmp_path / "report.json")
    assert report["view"] == "positive" and report["n_partitions"] == 2
    metrics = report["metrics"]
    assert metrics["view"] == "positive" and metrics["n"] == N_ROWS
    # Guo et al.'s loop, by hand: on P(class 1) and 1[y = 1], then on the folded confidence
    ece = brute_force_ece(positive, labels.astype(float))
    confidence = np.maximum(positive, 1 - positive)
    folded = brute_force_ece(confidence, ((positive > 0.5) == labels).astype(float))
    assert metrics["measures"]["ece"]["plug_in"] == pytest.approx(ece, rel=1e-9)
    top = report["views"]["top_label"]["metrics_by_subset"]["all"]
    assert top["view"] == "top_label"
    assert top["measures"]["ece"]["plug_in"] == pytest.approx(folded, rel=1e-9)
    assert ece > 0.06 and folded < 0.025  # what the positive view sees, the top label hides
    assert metrics["measures"]["smooth_ece"]["plug_in"] > 3 * top["measures"]["smooth_ece"][
        "plug_in"]
    (diagram,) = report["reliability"]["diagrams"]
    assert report["reliability"]["view"] == "positive" and diagram["label"] == "class 1"
    assert sum(diagram["count"]) == N_ROWS

    test = metrics["calibration_test"]
    expected = calibration_tests_by_view(labels, positive, n_resamples=N_RESAMPLES,
                                         random_state=0)
    assert test["view"] == "positive" and test["rejected"]
    assert test["p_value"] == expected.headline.p_value
    (other,) = test["other_views"]
    assert other["view"] == "top_label" and other["p_value"] == expected.others[0].p_value
    assert not other["rejected"] and test["views_disagree"]
    assert test["disagreement"] == expected.disagreement
    printed = capsys.readouterr().out
    assert "positive view: P(class 1) against the frequency of class 1" in printed
    assert test["summary"] in printed and "Trust the positive-class view" in printed
    assert f"Checked in the top-label view: p = {other['p_value']:.3f}" in printed


def test_the_top_label_view_is_still_available(tmp_path, capsys) -> None:
    """--view top_label shows the folded view's measures and diagram; the test of
    calibration is the same (it never reads a verdict from a folded view); classwise is
    refused with a reason."""
    labels, positive, files = planted(tmp_path / "logs", 1.3, 3)
    report = report_of(files, tmp_path / "top.json", "--view", "top_label")
    assert report["view"] == "top_label" and report["metrics"]["view"] == "top_label"
    assert report["metrics"]["measures"]["ece"]["plug_in"] == pytest.approx(brute_force_ece(
        np.maximum(positive, 1 - positive), ((positive > 0.5) == labels).astype(float)),
        rel=1e-9)
    assert report["reliability"]["diagrams"][0]["label"] == "top label"
    assert report["metrics"]["calibration_test"]["view"] == "positive"
    assert report["views"]["positive"]["metrics_by_subset"]["all"]["measures"]["ece"][
        "plug_in"] == pytest.approx(brute_force_ece(positive, labels.astype(float)), rel=1e-9)
    assert "top-label view: the top class's probability" in capsys.readouterr().out
    assert main(["report", files, "--engine", "dask", "--view", "classwise"]) == 2
    assert "--view classwise is not available" in capsys.readouterr().err
