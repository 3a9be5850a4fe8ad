"""Datasets registered by reference through REST, read on a Dask LocalCluster of
two worker processes named by CALIBDASH_DASK_SCHEDULER."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.distributed import Client, LocalCluster
from fastapi.testclient import TestClient

from app.jobs import Progress
from app.main import create_app
from app.services.partitioned_files import computed_rows
from app.services.report import _split_counts, _split_names
from calibcore import metrics
from calibcore.data import build_prediction_set, infer_roles
from calibcore.metrics import calibration_tests_by_view, global_measures
from tests.app.test_api import assert_error

N_ROWS = 30_000


@pytest.fixture(scope="module")
def scheduler(dask_cluster: LocalCluster) -> str:
    return str(dask_cluster.scheduler_address)


def logs(folder: Path, n_rows: int = N_ROWS, n_files: int = 3,
         names: tuple[str, str] = ("delayed", "p_delayed")) -> pd.DataFrame:
    """Binary predictions with two features and a split, written as ``n_files`` Parquet
    files (the returned frame is all of them, in order)."""
    rng = np.random.default_rng(14)
    x = rng.normal(size=(n_rows, 2))
    logit = 1.2 * x[:, 0] - 0.7 * x[:, 1]
    frame = pd.DataFrame({
        names[0]: (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(int),
        names[1]: 1 / (1 + np.exp(-1.6 * logit + 0.2)), "x0": x[:, 0], "x1": x[:, 1],
        "split": np.where(rng.random(n_rows) < 0.5, "calibration", "test")})
    folder.mkdir(parents=True)
    for number, rows in enumerate(np.array_split(np.arange(n_rows), n_files)):
        frame.iloc[rows].to_parquet(folder / f"part-{number}.parquet", index=False)
    return frame


def finished(client: TestClient, response) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    deadline = time.monotonic() + 120
    while (job := client.get(f"/api/v1/jobs/{job_id}").json())["status"] in (
            "queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    return job


@pytest.mark.slow
def test_external_files_are_measured_exactly_and_sampled_for_the_pages(
        settings_factory, scheduler, tmp_path, monkeypatch) -> None:
    """Registered by a glob under an allowed root: the overview's measures equal the
    in-memory ones on every row (intervals too), the binned diagram is exact, and every
    other result says it was computed on a sample of N of M rows. The job's fraction
    moves within each Dask pass, as its partitions are done."""
    reports: list[tuple[float, str | None]] = []
    update = Progress.update

    def recorded(self: Progress, fraction: float, message: str | None = None,
                 **kwargs: Any) -> None:
        reports.append((fraction, message))
        update(self, fraction, message, **kwargs)

    monkeypatch.setattr(Progress, "update", recorded)
    frame = logs(tmp_path / "logs")
    settings = settings_factory(external_roots=str(tmp_path / "logs"),
                                dask_scheduler=scheduler, external_sample_rows=5_000)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        job = finished(client, client.post("/api/v1/datasets/external", json={
            "uri": str(tmp_path / "logs" / "*.parquet"), "label": "delayed",
            "probabilities": ["p_delayed"], "split": "split", "name": "flight logs"}))
        assert job["status"] == "succeeded", job["error"]
        dataset = job["result"]
        assert dataset["name"] == "flight logs" and dataset["roles"]["features"] == ["x0", "x1"]
        external = dataset["external"]
        assert external["n_rows"] == N_ROWS and external["n_partitions"] == 3
        assert external["sampled"] and abs(external["n_sample"] - 5_000) <= 3
        assert dataset["n_rows"] == external["n_sample"]
        # read on the cluster CALIBDASH_DASK_SCHEDULER names, not on a local one
        assert external["scheduler"] == scheduler
        with Client(scheduler) as dask_client:
            ran = dask_client.run_on_scheduler(
                lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
        assert {"read_parquet", "partition_summaries"} <= set(ran), ran
        fractions = [fraction for fraction, _ in reports]
        assert fractions == sorted(fractions) and fractions[-1] >= 0.95
        for message in ("reading the classes", "summarising every partition",
                        "equal-mass bins", "checking the split", "summarising the test",
                        "VECE and LOESS", "drawing a seeded sample"):
            moved = {f for f, said in reports if said and said.startswith(message)}
            # its start, its end and between them (3 files: 2 or 3 partitions a pass, as
            # dask fuses small ones when it reads few columns)
            assert len(moved) >= 3, (message, reports)

        labels, positive = frame["delayed"].to_numpy(), frame["p_delayed"].to_numpy()
        # every row in both views: the positive-class view a binary file opens in, and
        # the top-label one; the test of calibration too (positive, checked in top label)
        tests = calibration_tests_by_view(labels, positive, random_state=0)
        for view in ("positive", "top_label"):
            expected = global_measures(labels, positive, view=view, interval="hybrid",
                                       random_state=0)
            body = client.get(f"/api/v1/datasets/{dataset['id']}/metrics",
                              params={"view": view}).json()
            assert body["view"] == view and body["n"] == N_ROWS
            assert "sample_note" not in body and f"{N_ROWS:,} rows" in body["exact_note"]
            test = body["calibration_test"]
            assert test["n"] == N_ROWS and test["view"] == "positive"
            assert test["p_value"] == tests.headline.p_value
            assert test["other_views"][0]["p_value"] == tests.others[0].p_value
            for estimate in expected.measures:
                if estimate.value is None or estimate.key not in body["measures"]:
                    continue
                item = body["measures"][estimate.key]  # intCE, kCE, smooth ECE included
                assert item["plug_in"] == pytest.approx(estimate.plug_in, rel=1e-9,
                                                        abs=1e-12), (view, estimate.key)
                assert item["low"] == pytest.approx(estimate.low, rel=1e-9, abs=1e-12)
                assert item["high"] == pytest.approx(estimate.high, rel=1e-9, abs=1e-12)
                assert item["low"] <= item["value"] <= item["high"], estimate.key
            assert body["metrics"]["ece"] == pytest.approx(
                metrics.expected_calibration_error(labels, positive, view=view), rel=1e-9)
        default = client.get(f"/api/v1/datasets/{dataset['id']}/metrics").json()
        assert default["view"] == "positive" and default["n"] == N_ROWS

        test_rows = frame[frame["split"] == "test"]
        test = client.get(f"/api/v1/datasets/{dataset['id']}/metrics",
                          params={"subset": "test", "view": "top_label"}).json()
        assert test["n"] == len(test_rows) and test["metrics"]["nll"] == pytest.approx(
            metrics.negative_log_likelihood(test_rows["delayed"].to_numpy(),
                                            test_rows["p_delayed"].to_numpy()), rel=1e-9)

        sample = client.get(f"/api/v1/datasets/{dataset['id']}/metrics",
                            params={"n_bins": 10, "view": "top_label"}).json()
        assert sample["n"] == external["n_sample"]
        assert sample["sample_note"].startswith(
            f"computed on a sample of {external['n_sample']:,} of {N_ROWS:,} rows")

        for view, label in (("top_label", "top label"), ("positive", "class 1")):
            diagram = client.get(f"/api/v1/datasets/{dataset['id']}/reliability",
                                 params={"view": view}).json()
            assert sum(diagram["diagrams"][0]["count"]) == N_ROWS
            assert diagram["diagrams"][0]["label"] == diagram["smooth"][0]["label"] == label
            assert "sample_note" not in diagram and diagram["smooth"][0]["n"] == N_ROWS
            assert f"every one of the {N_ROWS:,} rows" in diagram["exact_note"]

        variables = client.get(f"/api/v1/datasets/{dataset['id']}/variables")
        assert variables.status_code == 200, variables.text

        assert client.delete(f"/api/v1/datasets/{dataset['id']}").status_code == 204
        assert not list((settings.data_dir / "documents").glob(f"{dataset['id']}*"))
    assert (tmp_path / "logs" / "part-0.parquet").exists()  # nothing of the input touched


@pytest.mark.slow
def test_the_sample_is_the_stored_rows_and_roles_are_inferred(
        settings_factory, scheduler, tmp_path) -> None:
    """Without roles they are inferred from the first rows as for an upload; the sample is
    a seeded subset of the rows: the same on a second registration."""
    frame = logs(tmp_path / "logs", n_rows=6_000, n_files=4, names=("y_true", "y_prob"))
    # no resamples: the intervals and the test are another test's; this one is the sample
    settings = settings_factory(external_roots=str(tmp_path), dask_scheduler=scheduler,
                                external_sample_rows=2_000, n_bootstrap=0)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        ids = []
        for _ in range(2):
            job = finished(client, client.post("/api/v1/datasets/external", json={
                "uri": str(tmp_path / "logs" / "part-*.parquet")}))
            assert job["status"] == "succeeded", job["error"]
            ids.append(job["result"]["id"])
        stored = [pd.read_parquet(settings.data_dir / "tables" / f"{i}.parquet") for i in ids]
    pd.testing.assert_frame_equal(stored[0], stored[1])
    keys = frame.round(12).astype(str).agg("|".join, axis=1)
    assert stored[0].round(12).astype(str).agg("|".join, axis=1).isin(keys).all()
    roles = infer_roles(frame).to_roles()
    assert (roles.label, roles.probabilities, roles.split) == ("y_true", ("y_prob",), "split")
    assert build_prediction_set(stored[0], roles).n_rows == len(stored[0])


def test_files_outside_the_roots_are_refused_before_any_job(settings_factory,
                                                            tmp_path) -> None:
    logs(tmp_path / "logs", n_rows=1_000, n_files=1)
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "keys.parquet").write_bytes(b"x")
    (tmp_path / "logs" / "link.parquet").symlink_to(tmp_path / "secret" / "keys.parquet")
    off = settings_factory()
    with TestClient(create_app(off), raise_server_exceptions=False) as client:
        error = assert_error(client.post("/api/v1/datasets/external", json={
            "uri": str(tmp_path / "logs" / "*.parquet")}), 403, "not_allowed")
        assert "CALIBDASH_EXTERNAL_ROOTS" in error["message"]
    settings = settings_factory(external_roots=f"{tmp_path / 'logs'}, s3://bucket/logs/")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for uri in (str(tmp_path / "secret" / "keys.parquet"),
                    str(tmp_path / "logs" / ".." / "secret" / "keys.parquet"),
                    str(tmp_path / "logs" / "*.parquet"),  # the link leads outside
                    "logs/part-0.parquet", "s3://bucket/other/x.parquet",
                    "http://169.254.169.254/latest/meta-data"):
            assert_error(client.post("/api/v1/datasets/external", json={"uri": uri}),
                         403, "not_allowed")
        (tmp_path / "logs" / "link.parquet").unlink()
        assert_error(client.post("/api/v1/datasets/external", json={
            "uri": str(tmp_path / "logs" / "none-*.parquet")}), 422, "no_files")
        assert_error(client.post("/api/v1/datasets/external", json={
            "uri": str(tmp_path / "logs" / "*.parquet"), "sample_rows": 5}), 422)
        assert client.get("/api/v1/datasets").json() == []


@pytest.mark.slow
def test_the_split_check_and_the_sample_give_what_compute_gives(scheduler) -> None:
    """Computed partition by partition (for progress), the split column's counts and the
    sampled rows are what ``value_counts`` and ``compute`` give."""
    rows = pd.DataFrame({"split": ["test", "cal", " Test", "other", None, "fit"] * 50,
                         "value": np.arange(300)})
    data = dd.from_pandas(rows, npartitions=8)
    names = data["split"].map_partitions(_split_names, meta=("split", object))
    sample = data.sample(frac=0.3, random_state=4)
    with Client(scheduler):
        fractions: list[float] = []
        counts = _split_counts(names, fractions.append)
        expected = names.value_counts(dropna=False).compute()
        pd.testing.assert_series_equal(counts.sort_index(), expected.sort_index(),
                                       check_names=False)
        pd.testing.assert_frame_equal(computed_rows(sample, fractions.append),
                                      sample.compute())
    assert len(fractions) == 16 and fractions.count(1.0) == 2


@pytest.mark.slow
def test_a_hive_folder_is_registered_with_its_partitions_as_columns(
        settings_factory, scheduler, tmp_path) -> None:
    """A folder named as the uri: its ``date=…`` partitions are read as a column, which
    becomes the dataset's time role (the timeline has a window a day); ``_SUCCESS`` and
    ``.crc`` files beside the data are skipped."""
    frame = logs(tmp_path / "flat", n_rows=3_000, names=("y_true", "y_prob"))
    folder = tmp_path / "lake"
    days = ("2026-11-24", "2026-11-25", "2026-11-26")
    for day, path in zip(days, sorted((tmp_path / "flat").glob("part-*.parquet")),
                         strict=True):
        (folder / f"date={day}").mkdir(parents=True)
        path.rename(folder / f"date={day}" / "part-0.parquet")
        (folder / f"date={day}" / ".part-0.parquet.crc").write_bytes(b"crc")
    (folder / "_SUCCESS").write_bytes(b"")
    settings = settings_factory(external_roots=str(folder), dask_scheduler=scheduler,
                                external_sample_rows=1_000, n_bootstrap=0)  # no intervals
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        job = finished(client, client.post("/api/v1/datasets/external",
                                           json={"uri": str(folder)}))
        assert job["status"] == "succeeded", job["error"]
        dataset = job["result"]
        assert dataset["roles"]["time"] == "date"
        assert dataset["roles"]["features"] == ["x0", "x1"]
        assert dataset["external"]["n_rows"] == len(frame)
        assert dataset["external"]["n_partitions"] == 3
        stored = pd.read_parquet(settings.data_dir / "tables" / f"{dataset['id']}.parquet")
        assert set(stored["date"]) == set(days) and len(stored) == dataset["n_rows"]
        body = client.get(f"/api/v1/datasets/{dataset['id']}/metrics",
                          params={"view": "top_label", "n_bootstrap": 0}).json()
        assert body["n"] == len(frame)
        timeline = client.get(f"/api/v1/datasets/{dataset['id']}/timeline",
                              params={"freq": "D"})
        assert timeline.status_code == 200, timeline.text
        assert timeline.json()["time"] == "date" and len(timeline.json()["windows"]) == 3


def test_folders_are_checked_against_the_roots_as_files_are(settings_factory,
                                                            tmp_path) -> None:
    """A folder outside the roots, through '..', or holding a link that leads out is
    refused (403) before any job; one without data files is a 422 naming what it holds."""
    logs(tmp_path / "logs", n_rows=300, n_files=1)
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "keys.parquet").write_bytes(b"x")
    (tmp_path / "logs" / "empty" / "_temporary").mkdir(parents=True)
    (tmp_path / "logs" / "empty" / "_SUCCESS").write_bytes(b"")
    (tmp_path / "logs" / "empty" / "README.md").write_text("nothing here")
    settings = settings_factory(external_roots=str(tmp_path / "logs"))
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for uri in (str(tmp_path / "secret"), str(tmp_path / "logs" / ".." / "secret"),
                    str(tmp_path)):
            error = assert_error(client.post("/api/v1/datasets/external", json={"uri": uri}),
                                 403, "not_allowed")
            assert "keys.parquet" not in error["message"]  # an outside folder is not listed
        error = assert_error(client.post("/api/v1/datasets/external", json={
            "uri": str(tmp_path / "logs" / "empty")}), 422, "no_files")
        assert error["message"].startswith(
            f"no Parquet or CSV files in {tmp_path / 'logs' / 'empty'}: found README.md, "
            "_SUCCESS (2 files)")
        (tmp_path / "logs" / "deeper").mkdir()
        (tmp_path / "logs" / "deeper" / "link.parquet").symlink_to(
            tmp_path / "secret" / "keys.parquet")
        assert_error(client.post("/api/v1/datasets/external", json={
            "uri": str(tmp_path / "logs")}), 403, "not_allowed")
        assert client.get("/api/v1/datasets").json() == []


@pytest.mark.slow
def test_a_weight_column_is_registered_and_measured_on_every_weighted_row(
        settings_factory, scheduler, tmp_path) -> None:
    """The weight role is given as an upload gives it: the exact report of every row sums
    the weights (measures equal to the in-memory weighted ones, Kish's n of all rows),
    the stored sample keeps its weights, and a bad rate is a 422 before any job."""
    frame = logs(tmp_path / "logs", n_rows=6_000, n_files=4, names=("y_true", "y_prob"))
    weights = np.random.default_rng(6).integers(0, 5, 6_000).astype(float)
    for number, rows in enumerate(np.array_split(np.arange(6_000), 4)):
        frame.iloc[rows].assign(w=weights[rows]).to_parquet(
            tmp_path / "logs" / f"part-{number}.parquet", index=False)
    # the plug-in values are compared; the weighted intervals are another test's
    settings = settings_factory(external_roots=str(tmp_path), dask_scheduler=scheduler,
                                external_sample_rows=2_000, n_bootstrap=0)
    uri = str(tmp_path / "logs" / "part-*.parquet")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        assert_error(client.post("/api/v1/datasets/external", json={
            "uri": uri, "weight": "w", "negative_rate": 0}), 422)
        job = finished(client, client.post("/api/v1/datasets/external", json={
            "uri": uri, "weight": "w", "features": []}))
        assert job["status"] == "succeeded", job["error"]
        dataset = job["result"]
        assert dataset["roles"]["weight"] == "w" and dataset["weighted"] is True
        n_eff = weights.sum() ** 2 / np.sum(weights**2)
        labels, positive = frame["y_true"].to_numpy(), frame["y_prob"].to_numpy()
        body = client.get(f"/api/v1/datasets/{dataset['id']}/metrics",
                          params={"view": "positive", "n_bootstrap": 0}).json()
        assert body["n"] == 6_000 and "exact_note" in body  # every row, not the sample
        assert body["weighted"] is True and body["n_eff"] == pytest.approx(n_eff, rel=1e-12)
        assert body["weights_note"] == f"weighted (Kish n_eff = {n_eff:,.0f} of 6,000 rows)"
        expected = global_measures(labels, positive, view="positive", n_bootstrap=0,
                                   sample_weight=weights)
        for key in ("ece", "brier", "nll", "accuracy", "interval_calibration_error",
                    "laplace_kernel_calibration_error", "smooth_ece"):
            assert body["measures"][key]["plug_in"] == pytest.approx(
                expected[key].value, abs=1e-9), key
        diagram = client.get(f"/api/v1/datasets/{dataset['id']}/reliability",
                             params={"view": "positive"}).json()
        assert sum(diagram["diagrams"][0]["count"]) == 6_000
        assert diagram["weighted"] is True and diagram["n_eff"] == pytest.approx(n_eff)
        stored = pd.read_parquet(settings.data_dir / "tables" / f"{dataset['id']}.parquet")
        assert "w" in stored.columns and len(stored) < 6_000
