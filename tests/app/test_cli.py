"""The calibdash command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from app.cli import main
from calibcore import metrics
from calibcore.partitioned import CELL_ERROR_BOUND
from tests.calibcore.metrics.test_metrics import brute_force_ece


@pytest.mark.slow
def test_report_writes_json_with_global_measures(shared_data, tmp_path, capsys) -> None:
    out = tmp_path / "report.json"
    assert main(["report", str(shared_data / "default_nb.csv"), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    frame = pd.read_csv(shared_data / "default_nb.csv")
    positive = frame["y_prob"].to_numpy()
    # a binary file is reported in the positive-class view: P(class 1) against 1[y = 1]
    assert report["view"] == "positive" and report["metrics"]["view"] == "positive"
    expected = brute_force_ece(positive, frame["y_true"].to_numpy().astype(float))
    assert report["metrics"]["metrics"]["ece"] == pytest.approx(expected, abs=1e-9)
    assert report["n_rows"] == 7000 and report["metrics_by_subset"]["test"]["n"] == 3474
    printed = capsys.readouterr().out
    assert f"plug-in {expected:.6f}" in printed and "smooth ECE" in printed
    for item in report["metrics"]["measures"].values():
        if item["low"] is not None:
            assert item["low"] <= item["value"] <= item["high"], item
    measures = report["metrics"]["measures"]
    assert measures["smooth_ece"]["consistent"] and not measures["ece"]["consistent"]
    assert measures["nll"]["low"] <= measures["nll"]["value"] <= measures["nll"]["high"]
    assert len(report["reliability"]["smooth"][0]["curve"]) == 200
    test = report["metrics"]["calibration_test"]
    assert test["n_resamples"] == 200 and test["statistic_name"] == "kCE"
    assert test["statistic"] == pytest.approx(
        report["metrics"]["metrics"]["laplace_kernel_calibration_error"])
    assert test["summary"] in printed and report["metrics_by_subset"]["test"][
        "calibration_test"]["n"] == 3474
    # the decision curve of every row: Vickers & Elkin's net benefit, by hand at t = 0.1
    decision = report["decision"]
    labels = frame["y_true"].to_numpy()
    assert decision["n"] == 7000 and len(decision["thresholds"]) == 99
    t = decision["thresholds"][9]
    by_hand = (((positive >= t) & (labels == 1)).sum()
               - ((positive >= t) & (labels == 0)).sum() * t / (1 - t)) / 7000
    assert t == 0.1 and decision["net_benefit"]["model"][9] == pytest.approx(by_hand, abs=1e-12)


def test_report_on_a_bad_file_exits_2_with_a_message(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    assert main(["report", str(bad)]) == 2
    assert "No label column" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.csv")]) == 2


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("CALIBDASH_PORT", "70000", "less than or equal to 65535"),
    ("CALIBDASH_MAX_UPLOAD_BYTES", "1GB", "valid integer"),
    ("CALIBDASH_COMPUTE_SLOTS", "0", "greater than or equal to 1"),
    ("CALIBDASH_JOB_WORKERS", "0", "greater than or equal to 1"),
    ("CALIBDASH_SESSION_HOURS", "-1", "greater than 0"),
    ("CALIBDASH_N_BOOTSTRAP", "100000", "less than or equal to 2000"),
])
def test_a_setting_out_of_its_bounds_stops_serve_with_its_name(
        variable, value, says, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["serve", "--data-dir", str(tmp_path / "store")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"calibdash: error: invalid setting: {variable}: "), error
    assert says in error and repr(value) in error and "Traceback" not in error
    assert not (tmp_path / "store").exists()  # refused before anything was created


@pytest.mark.parametrize("port", ["0", "65536", "-1", "http"])
def test_a_port_that_is_not_a_tcp_port_is_refused_by_the_command_line(port, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", port])
    assert exited.value.code == 2
    assert "argument --port" in capsys.readouterr().err


@pytest.mark.slow
def test_report_writes_a_self_contained_html_page(shared_data, tmp_path) -> None:
    page = tmp_path / "report.html"
    assert main(["report", str(shared_data / "default_nb.csv"), "--html", str(page),
                 "--n-bootstrap", "20"]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "Calibration report" in text
    assert "plotly" in text.lower() and 'src="http' not in text  # plotly.js inlined
    assert "smooth ECE" in text and "income" in text and text.count("plotly-graph-div") >= 4
    assert ("Calibration test (consistency resampling on kCE, 20 resamples, positive-class "
            "view)" in text)
    assert "Checked in the top-label view: p = " in text
    assert "<h2>Decision curve</h2>" in text and "treat none" in text
    assert "The model&#x27;s band lies above treat all and treat none at" in text


@pytest.mark.slow
def test_report_with_the_dask_engine_reads_many_files_and_equals_the_in_memory_one(
        shared_data, tmp_path, capsys) -> None:
    """default_nb split into three Parquet files and pointed at by a glob: roles inferred as
    for an upload, the exact measures equal the in-memory report's, both in the positive
    view a binary file opens in."""
    frame = pd.read_csv(shared_data / "default_nb.csv")
    folder = tmp_path / "logs"
    folder.mkdir()
    for number, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[rows].to_parquet(folder / f"part-{number}.parquet")
    out, memory = tmp_path / "dask.json", tmp_path / "memory.json"
    assert main(["report", str(folder / "*.parquet"), "--engine", "dask", "--out",
                 str(out)]) == 0
    assert main(["report", str(shared_data / "default_nb.csv"), "--n-bootstrap", "0",
                 "--out", str(memory)]) == 0
    report, expected = json.loads(out.read_text()), json.loads(memory.read_text())
    assert report["engine"] == "dask" and report["n_partitions"] == 3
    assert report["view"] == expected["view"] == "positive"
    assert report["n_rows"] == 7000 and report["classes"] == expected["classes"]
    assert report["roles"] == expected["roles"]
    assert report["roles"]["label"] == "y_true" and report["roles"]["split"] is not None
    assert set(report["metrics_by_subset"]) == {"all", "test"}
    for subset, result in report["metrics_by_subset"].items():
        reference = expected["metrics_by_subset"][subset]
        assert result["n"] == reference["n"]
        for key, item in result["measures"].items():  # intCE, kCE, smooth ECE included
            assert item["plug_in"] == pytest.approx(reference["measures"][key]["value"],
                                                    rel=1e-9, abs=1e-12), (subset, key)
            assert item["low"] <= item["value"] <= item["high"], (subset, key)
    assert report["metrics"]["resampling"].startswith("resampled through")
    labels, proba = frame["y_true"].to_numpy(), frame["y_prob"].to_numpy()
    assert report["metrics"]["equal_mass"]["ece"] == pytest.approx(
        metrics.expected_calibration_error(labels, proba, binning="equal_mass",
                                           view="positive"), rel=1e-9)
    top = report["views"]["top_label"]
    assert top["metrics_by_subset"]["all"]["measures"]["ece"]["plug_in"] == pytest.approx(
        metrics.expected_calibration_error(labels, proba), rel=1e-9)
    assert top["reliability"]["diagrams"][0]["label"] == "top label"
    (diagram,) = report["reliability"]["diagrams"]
    (reference,) = expected["reliability"]["diagrams"]
    assert diagram["count"] == reference["count"] and diagram["label"] == reference["label"]
    for part in ("mean_score", "observed", "observed_low", "observed_high"):
        assert np.allclose(np.array(diagram[part], dtype=float),
                           np.array(reference[part], dtype=float), rtol=1e-9,
                           equal_nan=True), part
    # the variables: VECE exact on every row, VCE(v*) within the LOESS bound
    expected_rows = {row["variable"]: row for row in expected["variables"]["variables"]}
    got_rows = report["variables"]["variables"]
    assert {row["variable"] for row in got_rows} == set(expected_rows)
    for row in got_rows:
        reference = expected_rows[row["variable"]]
        assert row["kind"] == reference["kind"]
        assert row["vece"] == pytest.approx(reference["vece"], rel=1e-9, abs=1e-12)
        assert row["vce_max"] == pytest.approx(reference["vce_max"], abs=1e-3)
        assert row["p_value"] is None
    (smooth,) = report["reliability"]["smooth"]
    (smooth_reference,) = expected["reliability"]["smooth"]
    assert smooth["bandwidth"] == smooth_reference["bandwidth"]
    assert np.abs(np.array(smooth["curve"]) - np.array(smooth_reference["curve"])).max() \
        < CELL_ERROR_BOUND
    assert [d["label"] for d in report["reliability"]["classwise"]] == [
        f"class {name}" for name in report["classes"]]
    assert "ECE" in capsys.readouterr().out
    page = tmp_path / "r.html"
    assert main(["report", str(folder / "*.parquet"), "--engine", "dask", "--html",
                 str(page)]) == 0
    assert "Reliability" in page.read_text() and "7,000 rows" in page.read_text()
    assert main(["report", str(folder / "*.parquet"), "--engine", "dask", "--view",
                 "classwise"]) == 2
    assert main(["report", str(shared_data / "default_nb.csv"), "--label", "y_true"]) == 2


def split_logs(tmp_path, n_rows: int = 12_000) -> tuple[pd.DataFrame, str]:  # type: ignore[no-untyped-def]
    """A binary prediction file with features and a split column, as three Parquet files."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(n_rows, 2))
    logit = 1.5 * x[:, 0] - x[:, 1]
    frame = pd.DataFrame({
        "y_true": (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(int),
        "y_prob": (1 / (1 + np.exp(-2 * logit + 0.3))).round(6), "x0": x[:, 0], "x1": x[:, 1],
        "split": np.where(rng.random(n_rows) < 0.5, "calibration", "test")})
    folder = tmp_path / "logs"
    folder.mkdir()
    for number, rows in enumerate(np.array_split(np.arange(n_rows), 3)):
        frame.iloc[rows].to_parquet(folder / f"part-{number}.parquet")
    return frame, str(folder / "*.parquet")


def test_recalibrate_with_the_dask_engine_writes_every_partition_corrected(
        tmp_path, capsys) -> None:
    """Fitted on the calibration rows as the in-memory command fits them, applied to every
    partition where it lies, written as partitioned Parquet beside the input; with a fit
    sample, the exported model applied to the whole file gives the same scores."""
    frame, logs = split_logs(tmp_path)
    frame.to_csv(tmp_path / "whole.csv", index=False)
    assert main(["recalibrate", logs, "--engine", "dask", "--method", "temperature"]) == 0
    assert "fitted on its calibration rows (" in capsys.readouterr().out
    written = pd.read_parquet(tmp_path / "logs" / "calibrated-temperature")
    assert main(["recalibrate", str(tmp_path / "whole.csv"), "--method", "temperature",
                 "--out", str(tmp_path / "memory.csv")]) == 0
    memory = pd.read_csv(tmp_path / "memory.csv")
    assert list(written.columns) == list(memory.columns) and len(written) == len(frame)
    np.testing.assert_allclose(written["calibrated_proba_1"], memory["calibrated_proba_1"],
                               rtol=1e-9)

    model, out = tmp_path / "model.json", tmp_path / "sampled"
    assert main(["recalibrate", logs, "--engine", "dask", "--method", "platt", "--out",
                 str(out), "--max-fit-rows", "5000", "--model-out", str(model)]) == 0
    printed = capsys.readouterr().out
    assert "seeded uniform sample of" in printed and "above max_fit_rows=5,000" in printed
    assert main(["apply", str(model), str(tmp_path / "whole.csv"), "--out",
                 str(tmp_path / "applied.csv")]) == 0
    applied = pd.read_csv(tmp_path / "applied.csv")
    np.testing.assert_allclose(pd.read_parquet(out)["calibrated_proba_1"],
                               applied["calibrated_proba_1"], rtol=1e-9)
    assert main(["recalibrate", logs, "--engine", "dask", "--method", "platt",
                 "--renormalize"]) == 2
    assert main(["recalibrate", str(tmp_path / "whole.csv"), "--method", "platt"]) == 2


@pytest.mark.slow
def test_report_with_the_dask_engine_takes_the_roles_it_is_given(tmp_path, capsys) -> None:
    """--label, --probabilities, --features and --split as the README shows them: the
    roles echo back, and the test rows' measures are those of the test rows in memory."""
    frame, logs = split_logs(tmp_path, n_rows=4_000)
    out = tmp_path / "report.json"
    assert main(["report", logs, "--engine", "dask", "--label", "y_true", "--probabilities",
                 "y_prob", "--features", "x0", "--split", "split", "--n-bootstrap", "0",
                 "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["roles"] == {"label": "y_true", "probabilities": ["y_prob"],
                               "features": ["x0"], "split": "split", "id": None,
                               "models": [], "weight": None}
    test = frame[frame["split"] == "test"]
    result = report["metrics_by_subset"]["test"]
    assert result["n"] == len(test)
    assert result["measures"]["nll"]["value"] == pytest.approx(
        metrics.negative_log_likelihood(test["y_true"].to_numpy(), test["y_prob"].to_numpy()),
        rel=1e-9)
    assert main(["report", logs, "--engine", "dask", "--split", "x1"]) == 2
    assert "4,000 values that are not calibration" in capsys.readouterr().err


@pytest.mark.slow
def test_the_dask_engine_runs_on_the_scheduler_of_calibdash_dask_scheduler(
        tmp_path, monkeypatch) -> None:
    """Without --scheduler, report and recalibrate use the cluster the server's setting
    names (as inside the server's container of docker/compose.yaml): the report says
    that address and its one worker, and the cluster's scheduler ran the reads and the
    partition summaries."""
    from dask.distributed import LocalCluster

    _, logs = split_logs(tmp_path, n_rows=2_000)
    out = tmp_path / "report.json"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster:
        monkeypatch.setenv("CALIBDASH_DASK_SCHEDULER", cluster.scheduler_address)
        assert main(["report", logs, "--engine", "dask", "--n-bootstrap", "0",
                     "--out", str(out)]) == 0
        report = json.loads(out.read_text())
        assert report["scheduler"] == cluster.scheduler_address and report["workers"] == 1
        ran = set(cluster.scheduler.task_prefixes)
        assert {"read_parquet", "partition_summaries"} <= ran, ran
        assert main(["recalibrate", logs, "--engine", "dask", "--method", "platt",
                     "--out", str(tmp_path / "corrected")]) == 0
        assert set(cluster.scheduler.task_prefixes) - ran  # the fit and the writing
    assert len(pd.read_parquet(tmp_path / "corrected")) == 2_000


def test_report_takes_the_per_bin_interval_and_shows_the_ks_and_kuiper_tests(
        shared_data, tmp_path, capsys) -> None:
    out, page = tmp_path / "report.json", tmp_path / "report.html"
    assert main(["report", str(shared_data / "default_nb.csv"), "--n-bootstrap", "20",
                 "--interval", "clopper_pearson", "--out", str(out), "--html", str(page)]) == 0
    report = json.loads(out.read_text())
    frame = pd.read_csv(shared_data / "default_nb.csv")
    (expected,) = metrics.binned_reliability(frame["y_true"], frame["y_prob"], view="positive",
                                             interval="clopper_pearson")
    (diagram,) = report["reliability"]["diagrams"]
    assert report["reliability"]["interval"] == diagram["interval"] == "clopper_pearson"
    assert np.allclose(np.array(diagram["observed_low"], dtype=float), expected.observed_low,
                       atol=1e-12, equal_nan=True)
    test = report["metrics"]["calibration_test"]
    assert [(t["view"], t["key"]) for t in test["cumulative"]] == [
        ("positive", "ks"), ("positive", "kuiper"), ("top_label", "ks"), ("top_label", "kuiper")]
    assert test["cumulative"][0]["statistic"] == pytest.approx(metrics.ks_calibration_error(
        frame["y_true"], frame["y_prob"], view="positive"), rel=1e-12)
    assert test["cumulative_summary"] in capsys.readouterr().out
    text = page.read_text(encoding="utf-8")
    assert "bars: 95% Clopper-Pearson intervals" in text
    assert "KS and Kuiper tests of the cumulative curve (Gupta et al. 2021; 20 resamples)" in text
    with pytest.raises(SystemExit) as refused:  # argparse's choices: exit 2 with the usage
        main(["report", str(shared_data / "default_nb.csv"), "--interval", "beta"])
    assert refused.value.code == 2
