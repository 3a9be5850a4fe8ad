"""Folders of prediction files as Spark, Hive and Dask write them, read on the Dask engine
as the glob of the same files is."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from app.cli import main
from app.services.lake_layouts import lake_files
from app.services.partitioned_files import read_partitioned
from app.services.report import partitioned_roles
from app.services.roles import RoleOverrides
from calibcore.exceptions import CalibrationInputError

DAYS = ("2026-11-24", "2026-11-25", "2026-11-26")


def predictions(n_rows: int = 3_000) -> pd.DataFrame:
    """Binary predictions with two features and a split column."""
    rng = np.random.default_rng(21)
    x = rng.normal(size=(n_rows, 2))
    logit = 1.5 * x[:, 0] - x[:, 1]
    return pd.DataFrame({
        "y_true": (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(int),
        "y_prob": (1 / (1 + np.exp(-2 * logit + 0.3))).round(6), "x0": x[:, 0],
        "x1": x[:, 1], "split": np.where(rng.random(n_rows) < 0.5, "calibration", "test")})


def chunks(frame: pd.DataFrame) -> list[pd.DataFrame]:
    return [frame.iloc[rows] for rows in np.array_split(np.arange(len(frame)), len(DAYS))]


def spark_folder(frame: pd.DataFrame, folder: Path) -> None:
    """``frame`` as Spark leaves a table: part files, their ``.crc`` checksums, a
    ``_SUCCESS`` marker and a ``_temporary`` folder of unfinished work (more rows, which
    must not be read)."""
    (folder / "_temporary" / "0").mkdir(parents=True)
    for number, chunk in enumerate(chunks(frame)):
        chunk.to_parquet(folder / f"part-{number}.parquet", index=False)
        (folder / f".part-{number}.parquet.crc").write_bytes(b"crc\x00")
    (folder / "_SUCCESS").write_bytes(b"")
    frame.to_parquet(folder / "_temporary" / "0" / "part-9.parquet", index=False)


def hive_folder(frame: pd.DataFrame, folder: Path, suffix: str = "parquet") -> None:
    """``frame`` partitioned by day and region (``date=…/region=eu/part-0.<suffix>``),
    one chunk a day, beside a ``_SUCCESS`` marker."""
    for day, chunk in zip(DAYS, chunks(frame), strict=True):
        leaf = folder / f"date={day}" / "region=eu"
        leaf.mkdir(parents=True)
        if suffix == "parquet":
            chunk.to_parquet(leaf / "part-0.parquet", index=False)
        else:
            chunk.to_csv(leaf / "part-0.csv", index=False)
    (folder / "_SUCCESS").write_bytes(b"")


def as_dask_reads(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its text as dask reads text (pyarrow strings, missing as NA)."""
    return frame.astype({"split": pd.StringDtype("pyarrow")})


def report(args: list[str], out: Path) -> dict:
    assert main(["report", *args, "--engine", "dask", "--n-bootstrap", "20", "--out",
                 str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.slow
def test_a_spark_folder_reports_what_the_glob_of_its_part_files_reports(tmp_path,
                                                                        capsys) -> None:
    """Bookkeeping files (``_SUCCESS``, ``.crc``, ``_temporary/``) are skipped; the
    measures, intervals and diagrams are those of the glob, value for value; the dask
    recalibration reads the folder too and writes beside it."""
    frame = predictions()
    folder = tmp_path / "logs"
    spark_folder(frame, folder)
    by_glob = report([str(folder / "part-*.parquet")], tmp_path / "glob.json")
    by_folder = report([f"{folder}/"], tmp_path / "folder.json")
    assert by_folder["n_rows"] == by_glob["n_rows"] == len(frame)
    assert by_folder["n_partitions"] == by_glob["n_partitions"]
    assert by_folder["roles"] == by_glob["roles"]
    assert by_folder["metrics_by_subset"] == by_glob["metrics_by_subset"]
    assert set(by_folder["metrics_by_subset"]) == {"all", "test"}
    assert by_folder["reliability"] == by_glob["reliability"]

    assert main(["recalibrate", str(folder), "--engine", "dask", "--method",
                 "temperature"]) == 0
    assert f"wrote {len(frame):,} corrected rows" in capsys.readouterr().out
    written = pd.read_parquet(tmp_path / "calibrated-temperature")
    assert len(written) == len(frame) and "calibrated_proba_1" in written


@pytest.mark.slow
def test_a_hive_folder_gives_its_partitions_as_columns(tmp_path) -> None:
    """``date=…/region=eu/`` levels become plain columns (text, as pyarrow reads them);
    a ``key=value`` folder above the one named is not one. The date is the time role and
    the measures are those of the same files without partitions."""
    frame = predictions()
    spark_folder(frame, tmp_path / "plain")
    folder = tmp_path / "env=prod" / "lake"
    hive_folder(frame, folder)
    table = read_partitioned(str(folder))
    assert list(table.columns) == [*frame.columns, "date", "region"]
    rows = table.compute()
    assert rows["date"].dtype == object or pd.api.types.is_string_dtype(rows["date"])
    assert not isinstance(rows["date"].dtype, pd.CategoricalDtype)
    counts = rows["date"].value_counts().sort_index()
    assert counts.to_dict() == {day: len(chunk) for day, chunk in zip(DAYS, chunks(frame),
                                                                      strict=True)}
    assert (rows["region"] == "eu").all()
    pd.testing.assert_frame_equal(rows[list(frame.columns)].reset_index(drop=True),
                                  as_dask_reads(frame))
    roles = partitioned_roles(table, RoleOverrides())
    assert roles.time == "date" and roles.features == ("x0", "x1", "region")

    plain = report([str(tmp_path / "plain" / "part-*.parquet")], tmp_path / "plain.json")
    hive = report([str(folder), "--features", "x0,x1"], tmp_path / "hive.json")
    assert hive["n_rows"] == len(frame) and hive["roles"] == plain["roles"]
    assert hive["metrics_by_subset"] == plain["metrics_by_subset"]


def test_a_csv_folder_reads_as_its_parquet_twin(tmp_path) -> None:
    """Plain and hive-partitioned CSV folders: the same rows and partition columns, in
    the same order and types, as the Parquet folder."""
    frame = predictions(600)
    hive_folder(frame, tmp_path / "parquet")
    hive_folder(frame, tmp_path / "csv", suffix="csv")
    from_parquet = read_partitioned(str(tmp_path / "parquet")).compute()
    from_csv = read_partitioned(str(tmp_path / "csv")).compute()
    pd.testing.assert_frame_equal(from_csv.reset_index(drop=True),
                                  from_parquet.reset_index(drop=True))
    (tmp_path / "flat").mkdir()
    for number, chunk in enumerate(chunks(frame)):
        chunk.to_csv(tmp_path / "flat" / f"part-{number}.csv", index=False)
    pd.testing.assert_frame_equal(
        read_partitioned(str(tmp_path / "flat")).compute().reset_index(drop=True),
        as_dask_reads(frame))


def test_a_folder_without_data_files_says_what_it_holds(tmp_path, capsys) -> None:
    junk = tmp_path / "logs"
    junk.mkdir()
    (junk / "_SUCCESS").write_bytes(b"")
    (junk / "notes.txt").write_text("not predictions")
    assert main(["report", str(junk), "--engine", "dask"]) == 2
    assert (f"no Parquet or CSV files in {junk}: found _SUCCESS, notes.txt (2 files)"
            in capsys.readouterr().err)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CalibrationInputError, match="it is empty") as empty:
        lake_files(str(tmp_path / "empty"))
    assert empty.value.code == "no_files"
    predictions(30).to_csv(junk / "a.csv", index=False)
    predictions(30).to_parquet(junk / "b.parquet")
    with pytest.raises(CalibrationInputError, match=r"both Parquet \(1\) and CSV \(1\)"):
        lake_files(str(junk))
