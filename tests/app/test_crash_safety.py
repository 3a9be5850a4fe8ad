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

import http.client
import io
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from app.store import Record, Store, new_id, now
from app.store import files as files_module
from app.store import sqlite as store_module
from tests.live_server import free_port, start_server


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


def _killing_at(step: str | None, kind: str | None = None) -> Callable[[str, str], None]:
    """A kill point that raises :class:`_Killed` at ``step`` (of records of ``kind``)."""

    def kill(at_kind: str, at: str) -> None:
        if at == step and kind in (None, at_kind):
            raise _Killed

    return kill


@pytest.mark.parametrize("step", ["written", "committed", "renamed"])
def test_a_crash_at_each_step_of_a_commit_is_all_or_nothing(tmp_path: Path, monkeypatch,
                                                            step: str) -> None:
    store = Store(tmp_path)
    frame = _frame(30, 2)
    dataset_id = new_id("ds")

    monkeypatch.setattr(store_module, "_kill_point", _killing_at(step))
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


@pytest.mark.parametrize("step", ["written", "committed", "renamed"])
def test_a_linked_table_at_each_step_of_a_commit_is_all_or_nothing(
        tmp_path: Path, monkeypatch, step: str) -> None:
    """A table committed as a hard link to a stored one (a confirmed upload's): a crash
    at any step leaves the stored table as it was, and the new one all or nothing."""
    store = Store(tmp_path)
    frame = _frame(30, 4)
    upload_id, dataset_id = new_id("up"), new_id("ds")
    store.commit(Record("upload", upload_id, None, "u", now(), {}), tables={upload_id: frame})

    monkeypatch.setattr(store_module, "_kill_point", _killing_at(step, "dataset"))
    with pytest.raises(_Killed), store.shared_table(
            dataset_id, store.table_path(upload_id)) as shared:
        store.commit(Record("dataset", dataset_id, None, "d", now(), {}),
                     written_tables={dataset_id: shared})
    monkeypatch.undo()

    reopened = Store(tmp_path)

    assert _journal(tmp_path) == [] and reopened.read_table(upload_id).equals(frame)
    if step == "written":
        assert reopened.get("dataset", dataset_id) is None
        assert _files(tmp_path) == [f"tables/{upload_id}.parquet"]
        assert store.table_path(upload_id).stat().st_nlink == 1
        return
    assert reopened.read_table(dataset_id).equals(frame)
    assert store.table_path(dataset_id).samefile(store.table_path(upload_id))
    reopened.delete("upload", upload_id)
    assert _files(tmp_path) == [f"tables/{dataset_id}.parquet"]
    assert reopened.read_table(dataset_id).equals(frame)


def test_a_linked_table_is_copied_where_hard_links_fail_and_refused_when_gone(
        tmp_path: Path, monkeypatch) -> None:
    store = Store(tmp_path)
    frame = _frame(40, 5)
    upload_id, dataset_id, gone_id = new_id("up"), new_id("ds"), new_id("ds")
    store.commit(Record("upload", upload_id, None, "u", now(), {}), tables={upload_id: frame})

    def no_links(source: Any, name: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(files_module.os, "link", no_links)
    with store.shared_table(dataset_id, store.table_path(upload_id)) as shared:
        store.commit(Record("dataset", dataset_id, None, "d", now(), {}),
                     written_tables={dataset_id: shared})
    monkeypatch.undo()
    assert not store.table_path(dataset_id).samefile(store.table_path(upload_id))
    assert store.table_path(dataset_id).read_bytes() == store.table_path(upload_id).read_bytes()

    with pytest.raises(FileNotFoundError), store.shared_table(
            gone_id, store.table_path(new_id("up"))) as shared:
        store.commit(Record("dataset", gone_id, None, "d", now(), {}),
                     written_tables={gone_id: shared})
    assert store.get("dataset", gone_id) is None
    assert _files(tmp_path) == sorted([f"tables/{upload_id}.parquet",
                                       f"tables/{dataset_id}.parquet"])


@pytest.mark.parametrize("step", ["written", "committed", "renamed", None])
def test_a_table_written_ahead_is_committed_all_or_nothing(tmp_path: Path, monkeypatch,
                                                           step: str | None) -> None:
    """A new dataset's table written on a thread while its rows are checked: while it is
    written a sweep (another process opening the store) leaves it alone; committed, it
    is the dataset's table; a crash at any step of the commit is all or nothing."""
    store = Store(tmp_path)
    frame = _frame(30, 6)
    dataset_id = new_id("ds")

    with store.table_ahead(dataset_id, frame) as written:
        staged = written()
        assert Store(tmp_path).removed_leftovers == [] and staged.path.exists()
        monkeypatch.setattr(store_module, "_kill_point", _killing_at(step))
        if step is None:
            store.commit(Record("dataset", dataset_id, None, "d", now(), {}),
                         written_tables={dataset_id: staged})
        else:
            with pytest.raises(_Killed):
                store.commit(Record("dataset", dataset_id, None, "d", now(), {}),
                             written_tables={dataset_id: staged})
        monkeypatch.undo()

    reopened = Store(tmp_path)

    assert _journal(tmp_path) == []
    if step == "written":
        assert reopened.get("dataset", dataset_id) is None and _files(tmp_path) == []
    else:
        assert _files(tmp_path) == [f"tables/{dataset_id}.parquet"]
        assert reopened.read_table(dataset_id).equals(frame)


def test_a_table_written_ahead_and_not_committed_is_removed(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with pytest.raises(ValueError, match="the rows were refused"):
        with store.table_ahead(new_id("ds"), _frame(20, 7)):
            raise ValueError("the rows were refused")  # before the write was waited for
    assert _files(tmp_path) == []


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
    mkstemp = files_module.tempfile.mkstemp

    def racing_mkstemp(**kwargs: Any) -> tuple[int, str]:
        handle, name = mkstemp(**kwargs)
        made.append(name)
        if len(made) == 1:
            os.unlink(name)   # a sweep removed it
        return handle, name

    monkeypatch.setattr(files_module.tempfile, "mkstemp", racing_mkstemp)
    target = tmp_path / "tables" / "x.parquet"
    files_module.atomic_write(target, lambda tmp: tmp.write_text("data"))
    assert len(made) == 2 and target.read_text() == "data"
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.parquet"]


# -- kill -9 of the real server --------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
BIG_ROWS = 300_000


class _Server:
    """``calibdash serve`` on ``data_dir`` in a process of its own
    (:func:`tests.live_server.start_server`)."""

    def __init__(self, data_dir: Path, env: dict[str, str], log: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.process = start_server(
            ["serve", "--port", str(self.port), "--data-dir", str(data_dir), "--no-example"],
            log=log, cwd=ROOT,
            env={**os.environ, "PYTHONWARNINGS": "ignore", "CALIBDASH_WARM_UP": "false",
                 "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                 **env})
        deadline = time.monotonic() + 120
        while True:
            try:
                self.get("/api/v1/health")
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("server did not start: "
                                       + log.read_text()[-3000:]) from None
                time.sleep(0.1)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def get(self, path: str) -> Any:
        status, body = self.request("GET", path)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def post(self, path: str, document: dict[str, Any]) -> tuple[int, Any]:
        status, body = self.request("POST", path, json.dumps(document).encode(),
                                    {"Content-Type": "application/json"})
        return status, json.loads(body)

    def upload(self, path: str, name: str, content: bytes) -> tuple[int, Any]:
        body, kind = _multipart(name, content)
        status, answer = self.request("POST", path, body, {"Content-Type": kind})
        return status, json.loads(answer)

    def kill(self) -> None:
        """``kill -9``."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.died()

    def died(self) -> None:
        """Wait until the server is dead (killed by us or by its kill point)."""
        assert self.process.wait(timeout=120) == -signal.SIGKILL

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _multipart(name: str, content: bytes) -> tuple[bytes, str]:
    boundary = "calibdash-crash-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"{name}\"\r\nContent-Type: text/csv\r\n\r\n").encode() + content + (
        f"\r\n--{boundary}--\r\n").encode()
    return body, f"multipart/form-data; boundary={boundary}"


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def _same_rows(table: pd.DataFrame, frame: pd.DataFrame) -> bool:
    return bool(table[list(frame.columns)].reset_index(drop=True).equals(frame))


def _records(data_dir: Path, kind: str | None = None) -> dict[str, dict[str, Any]]:
    with sqlite3.connect(data_dir / "calibdash.sqlite3") as connection:
        rows = connection.execute("SELECT kind, id, meta FROM records").fetchall()
    return {row[1]: json.loads(row[2]) for row in rows if kind in (None, row[0])}


def _snapshot(server: _Server) -> dict[str, Any]:
    """Every dataset, recalibration and staged upload, read back in full."""
    tables = server.data_dir / "tables"
    content: dict[str, Any] = {}
    for dataset in server.get("/api/v1/datasets"):
        dataset_id = dataset["id"]
        assert server.get(f"/api/v1/datasets/{dataset_id}") == dataset
        content[dataset_id] = (dataset, pd.read_parquet(tables / f"{dataset_id}.parquet"))
        for fitted in server.get(f"/api/v1/datasets/{dataset_id}/recalibrations"):
            rc = fitted["id"]
            status, download = server.request("GET", f"/api/v1/recalibrations/{rc}/download")
            assert status == 200, download[:500]
            content[rc] = (fitted, download, server.get(f"/api/v1/recalibrations/{rc}/model"))
    for upload_id, meta in _records(server.data_dir, "upload").items():
        content[upload_id] = (meta, pd.read_parquet(tables / f"{upload_id}.parquet"))
    return content


def _assert_same(before: Any, after: Any) -> None:
    for old, new in zip(before, after, strict=True):
        assert new.equals(old) if isinstance(old, pd.DataFrame) else new == old


def _assert_nothing_left_behind(data_dir: Path, point: str) -> None:
    ids = set(_records(data_dir))
    temporary = [str(p.relative_to(data_dir)) for p in data_dir.rglob(".*")
                 if p.is_file() and p.parent != data_dir]
    assert temporary == [], f"{point}: temporary files left: {temporary}"
    unowned = [name for name in _files(data_dir)
               if files_module.owner(data_dir / name) not in ids]
    assert unowned == [], f"{point}: files no record references: {unowned}"
    assert _journal(data_dir) == [], point
    for record_id in _records(data_dir, "dataset") | _records(data_dir, "recalibration"):
        assert (data_dir / "tables" / f"{record_id}.parquet").is_file(), (point, record_id)


@contextmanager
def _watching(server: _Server) -> Iterator[None]:
    """Requests a kill point cuts short end in a reset connection, not an answer."""
    try:
        yield
    except (http.client.HTTPException, ConnectionError):
        pass
    server.died()


def _wait_for(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.mark.slow
def test_kill_9_at_any_point_loses_nothing_and_leaves_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    external = tmp_path / "lake"
    external.mkdir()
    log = tmp_path / "server.log"
    small = {name: _frame(2_000, seed) for seed, name in enumerate(
        ["base", "written", "committed", "staged", "answered"])}
    lake = _frame(3_000, 9)
    lake.to_parquet(external / "part-0.parquet", index=False)
    big = _csv(_frame(BIG_ROWS, 10))
    big_body, big_kind = _multipart("big.csv", big)
    killed_points: list[str] = []

    def stream_then_kill(server: _Server) -> None:
        """kill -9 while the request body is still arriving."""
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        connection.putrequest("POST", "/api/v1/datasets")
        connection.putheader("Content-Type", big_kind)
        connection.putheader("Content-Length", str(len(big_body)))
        connection.endheaders()
        connection.send(big_body[:len(big_body) // 3])
        time.sleep(0.3)
        server.kill()
        connection.close()

    def parse_then_kill(server: _Server) -> None:
        """kill -9 once the whole upload is spooled to incoming/, while it is parsed."""
        incoming = server.data_dir / "incoming"
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        connection.request("POST", "/api/v1/datasets", body=big_body,
                           headers={"Content-Type": big_kind})
        _wait_for(lambda: incoming.is_dir() and any(
            p.stat().st_size == len(big) for p in incoming.iterdir()))
        time.sleep(0.05)
        server.kill()
        connection.close()

    def hook(kind: str, step: str) -> dict[str, str]:
        return {store_module.KILL_AT: f"{kind}:{step}"}

    def upload(name: str, path: str = "/api/v1/datasets") -> Callable[[_Server], None]:
        def act(server: _Server) -> None:
            with _watching(server):
                server.upload(path, f"{name}.csv", _csv(small[name]))
        return act

    def answered_then_kill(server: _Server) -> None:
        status, answer = server.upload("/api/v1/datasets", "answered.csv",
                                       _csv(small["answered"]))
        server.kill()   # right after the response
        assert status == 201, answer

    def register_external(server: _Server) -> None:
        with _watching(server):
            status, answer = server.post("/api/v1/datasets/external", {
                "uri": str(external / "part-0.parquet"), "label": "y_true",
                "probabilities": ["y_prob"], "name": "lake"})
            assert status == 202, answer

    def recalibrate(server: _Server) -> None:
        with _watching(server):
            status, answer = server.post(f"/api/v1/datasets/{base_id}/recalibrations",
                                         {"method": "isotonic", "async": True})
            assert status == 202, answer

    def new_dataset(name: str, frame: pd.DataFrame) -> Callable[[set[str], dict], None]:
        def expect(new: set[str], after: dict[str, Any]) -> None:
            assert len(new) == 1, new
            summary, table = after[new.pop()]
            assert summary["name"] == name and _same_rows(table, frame)
        return expect

    def nothing_new(new: set[str], after: dict[str, Any]) -> None:
        assert new == set()

    def maybe_big(new: set[str], after: dict[str, Any]) -> None:
        assert len(new) <= 1  # depends on how far the parse got; complete if there
        for record_id in new:
            assert _same_rows(after[record_id][1], pd.read_csv(io.BytesIO(big)))

    def staged_then_confirmed(new: set[str], after: dict[str, Any]) -> None:
        assert len(new) == 1 and new <= set(_records(data_dir, "upload"))
        upload_id = new.pop()
        assert _same_rows(after[upload_id][1], small["staged"])
        status, answer = server.post(f"/api/v1/uploads/{upload_id}/confirm", {})
        assert status == 201 and answer["n_rows"] == 2_000, answer

    def new_recalibration(new: set[str], after: dict[str, Any]) -> None:
        assert len(new) == 1 and after[next(iter(new))][0]["method"] == "isotonic", new

    # (kill point, environment of the server it kills, what to do, what must be new after)
    points: list[tuple[str, dict[str, str], Callable[[_Server], None], Callable[..., None]]] = [
        ("streaming a 300k-row CSV", {}, stream_then_kill, nothing_new),
        ("parsing the 300k-row CSV", {}, parse_then_kill, maybe_big),
        ("dataset files written, not committed", hook("dataset", "written"),
         upload("written"), nothing_new),
        ("dataset committed, files not renamed", hook("dataset", "committed"),
         upload("committed"), new_dataset("committed.csv", small["committed"])),
        ("staged upload committed, not renamed", hook("upload", "committed"),
         upload("staged", "/api/v1/uploads"), staged_then_confirmed),
        ("recalibration job: committed, not renamed", hook("recalibration", "committed"),
         recalibrate, new_recalibration),
        ("Dask registration job: renamed, journal not cleared",
         {**hook("dataset", "renamed"), "CALIBDASH_EXTERNAL_ROOTS": str(external)},
         register_external, new_dataset("lake", lake)),
        ("right after the 201 of an upload", {}, answered_then_kill,
         new_dataset("answered.csv", small["answered"])),
    ]

    server = _Server(data_dir, points[0][1], log)
    status, answer = server.upload("/api/v1/datasets", "base.csv", _csv(small["base"]))
    assert status == 201, answer
    base_id = answer["id"]
    status, answer = server.post(f"/api/v1/datasets/{base_id}/recalibrations",
                                 {"method": "platt"})
    assert status == 201, answer
    try:
        for index, (point, _, act, expect) in enumerate(points):
            before = _snapshot(server)
            act(server)
            killed_points.append(point)
            following = points[index + 1][1] if index + 1 < len(points) else {}
            server = _Server(data_dir, following, log)   # restarted on the same directory
            _assert_nothing_left_behind(data_dir, point)
            after = _snapshot(server)
            lost = set(before) - set(after)
            assert lost == set(), f"{point}: lost {lost}"
            for record_id, content in before.items():
                _assert_same(content, after[record_id])
            expect(set(after) - set(before), after)
    finally:
        server.stop()
    assert len(killed_points) == len(points)
