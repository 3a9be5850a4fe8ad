"""Crash safety of the store: a killed server loses nothing and leaves nothing behind.

The fast tests drive :class:`app.store.Store` in-process: the start-up sweep removes
temporary files and orphans, finishes the renames of committed records, and never
touches a file that a write still running owns. The slow test starts the real server,
kills it with SIGKILL at many points (while a 300k-row CSV streams in, while it is
parsed, at each step of storing a dataset, a staged upload, a recalibration and a Dask
registration, right after a response) and restarts it on the same data directory.
Kill points inside the store are reached deterministically through the test-only
environment variable ``CALIBDASH_TEST_KILL_AT`` (see :mod:`app.store.sqlite`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from app.store import Record, Store, new_id, now
from app.store import sqlite as store_module


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n).round(6)
    return pd.DataFrame({"y_true": (rng.uniform(size=n) < p).astype(int), "y_prob": p})


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for folder in ("tables", "documents")
                  for p in (root / folder).iterdir())


def _journal(root: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(root / "calibdash.sqlite3") as connection:
        return connection.execute("SELECT tmp, final FROM renames").fetchall()


# -- the sweep, in-process ------------------------------------------------------------------
def test_the_sweep_removes_orphans_and_temporary_files_and_keeps_what_records_use(
        tmp_path: Path) -> None:
    store = Store(tmp_path)
    kept_id, gone_id = new_id("ds"), new_id("ds")
    frame = _frame(50, 0)
    store.commit(Record("dataset", kept_id, None, "kept", now(), {}),
                 tables={kept_id: frame}, documents={f"{kept_id}-external": {"a": 1}})
    store.write_document(f"{kept_id}.metrics.0123", {"cached": True})
    leftovers = [f"tables/{gone_id}.parquet", f"tables/{gone_id}.model_scores.parquet",
                 f"documents/{gone_id}-external.json",   # "<id>-<key>" names too
                 f"documents/{gone_id}.metrics.0123.json",
                 f"tables/.{kept_id}.parquet.x81ty.tmp",   # a write of a kept record
                 f"documents/.{gone_id}.json.a1b2.tmp"]
    foreign = ["tables/notes.parquet", "documents/readme.json"]  # not named by an id
    for name in leftovers + foreign:
        (tmp_path / name).write_bytes(b"\0" * 4096)

    removed = Store(tmp_path).removed_leftovers

    assert sorted(str(p.relative_to(tmp_path)) for p in removed) == sorted(leftovers)
    assert _files(tmp_path) == sorted([f"documents/{kept_id}-external.json",
                                       f"documents/{kept_id}.metrics.0123.json",
                                       f"tables/{kept_id}.parquet", *foreign])
    assert store.read_table(kept_id).equals(frame)
    assert store.read_document(f"{kept_id}-external") == {"a": 1}


def test_nothing_is_renamed_before_the_record_is_committed(tmp_path: Path,
                                                             monkeypatch) -> None:
    store = Store(tmp_path)
    seen: dict[str, list[str]] = {}

    def spy(kind: str, step: str) -> None:
        seen[step] = _files(tmp_path)
        seen[step + " records"] = [r.id for r in store.find("dataset")]

    monkeypatch.setattr(store_module, "_kill_point", spy)
    dataset_id = new_id("ds")
    store.commit(Record("dataset", dataset_id, None, "d", now(), {}),
                 tables={dataset_id: _frame(20, 1)}, documents={f"{dataset_id}-x": [1]})
    # written: only temporary names, no record; committed: the record, still temporary names
    for step, records in (("written", []), ("committed", [dataset_id])):
        assert seen[step + " records"] == records
        assert len(seen[step]) == 2 and all(
            Path(name).name.startswith(".") and name.endswith(".tmp") for name in seen[step])
    assert seen["renamed"] == [f"documents/{dataset_id}-x.json", f"tables/{dataset_id}.parquet"]
    assert _journal(tmp_path) == []


class _Killed(BaseException):
    """Stands for SIGKILL in-process: nothing below the kill point runs."""


@pytest.mark.parametrize("step", ["written", "committed", "renamed"])
def test_a_crash_at_each_step_of_a_commit_is_all_or_nothing(tmp_path: Path, monkeypatch,
                                                            step: str) -> None:
    store = Store(tmp_path)
    frame = _frame(30, 2)
    dataset_id = new_id("ds")

    def kill(kind: str, at: str) -> None:
        if at == step:
            raise _Killed

    monkeypatch.setattr(store_module, "_kill_point", kill)
    with pytest.raises(_Killed):
        store.commit(Record("dataset", dataset_id, None, "d", now(), {}),
                     tables={dataset_id: frame}, documents={dataset_id: {"m": 1}})
    monkeypatch.undo()
    if step != "written":
        assert len(_journal(tmp_path)) == 2  # committed: the journal holds its renames

    reopened = Store(tmp_path)

    assert _journal(tmp_path) == []
    if step == "written":   # not committed: nothing of it stays
        assert reopened.get("dataset", dataset_id) is None
        assert _files(tmp_path) == []
    else:                   # committed: all of it stays, under the final names
        assert reopened.read_table(dataset_id).equals(frame)
        assert reopened.read_document(dataset_id) == {"m": 1}
        assert _files(tmp_path) == [f"documents/{dataset_id}.json",
                                    f"tables/{dataset_id}.parquet"]
    assert len(reopened.finished_renames) == (2 if step == "committed" else 0)


def test_a_failed_write_leaves_no_record_and_no_file(tmp_path: Path) -> None:
    store = Store(tmp_path)
    dataset_id = new_id("ds")
    with pytest.raises(ValueError):
        store.commit(Record("dataset", dataset_id, None, "d", now(), {}),
                     tables={dataset_id: _frame(10, 3)},
                     documents={dataset_id: {"x": float("nan")}})  # not JSON
    with pytest.raises(ValueError, match="not named after"):
        store.commit(Record("dataset", dataset_id, None, "d", now(), {}),
                     tables={new_id("ds"): _frame(10, 3)})
    assert store.get("dataset", dataset_id) is None
    assert _files(tmp_path) == []


def test_the_sweep_never_touches_a_file_a_running_write_owns(tmp_path: Path,
                                                             monkeypatch) -> None:
    """Another store opened on the directory (another process, a second server) while a
    write runs: neither the file being written nor the committed one being renamed is
    removed, and the write completes."""
    store = Store(tmp_path)
    frame = _frame(40, 4)
    reached = {step: threading.Event() for step in ("writing", "committed")}
    go = {step: threading.Event() for step in reached}
    write_table = store_module._write_table

    def slow_write(path: Path, table: pd.DataFrame) -> None:
        write_table(path, table)
        reached["writing"].set()
        assert go["writing"].wait(10)

    def pause(kind: str, step: str) -> None:
        if step in reached:
            reached[step].set()
            assert go[step].wait(10)

    monkeypatch.setattr(store_module, "_write_table", slow_write)
    monkeypatch.setattr(store_module, "_kill_point", pause)
    dataset_id = new_id("ds")
    thread = threading.Thread(target=store.commit, args=(
        Record("dataset", dataset_id, None, "d", now(), {}),), kwargs={
        "tables": {dataset_id: frame}})
    thread.start()
    try:
        for step in ("writing", "committed"):
            assert reached[step].wait(10)
            files = _files(tmp_path)
            sweep = Store(tmp_path)   # a second store sweeps now
            assert sweep.removed_leftovers == [] and sweep.finished_renames == []
            assert _files(tmp_path) == files and len(files) == 1 and files[0].endswith(".tmp")
            go[step].set()
    finally:
        for event in go.values():
            event.set()
        thread.join(10)
    assert _files(tmp_path) == [f"tables/{dataset_id}.parquet"]
    assert _journal(tmp_path) == []
    assert Store(tmp_path).read_table(dataset_id).equals(frame)


def test_a_temporary_file_removed_before_its_lock_is_taken_is_made_again(
        tmp_path: Path, monkeypatch) -> None:
    """The one moment a sweep can take a new temporary file: between ``mkstemp`` and the
    lock. The writer sees its name gone and makes another."""
    made: list[str] = []
    mkstemp = store_module.tempfile.mkstemp

    def racing_mkstemp(**kwargs: Any) -> tuple[int, str]:
        handle, name = mkstemp(**kwargs)
        made.append(name)
        if len(made) == 1:
            os.unlink(name)   # a sweep removed it
        return handle, name

    monkeypatch.setattr(store_module.tempfile, "mkstemp", racing_mkstemp)
    target = tmp_path / "tables" / "x.parquet"
    store_module.atomic_write(target, lambda tmp: tmp.write_text("data"))
    assert len(made) == 2 and target.read_text() == "data"
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.parquet"]
