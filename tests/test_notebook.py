"""calibdash.explore: the real server on a thread, from a script and from a Jupyter kernel."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import calibdash
from calibcore import metrics
from calibcore.exceptions import CalibrationInputError
from tests.conftest import REPO

OVERVIEW_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/overview\?dataset=(ds_[\w-]+)")


def predictions(n_rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y_prob = rng.uniform(0.05, 0.95, size=n_rows)
    return pd.DataFrame({"y_true": (rng.uniform(size=n_rows) < y_prob).astype(int),
                         "y_prob": y_prob, "age": rng.normal(50, 10, size=n_rows)})


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("calibdash-server")]


@pytest.fixture
def temporary_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where explore's temporary data folders go during the test."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_explore_serves_the_dataset_and_stop_frees_the_port(temporary_dirs: Path) -> None:
    frame = predictions(400)
    handle = calibdash.explore(frame, mode="external")
    try:
        port, dataset_id = OVERVIEW_URL.fullmatch(handle.url).groups()  # type: ignore[union-attr]
        assert dataset_id == handle.dataset_id
        assert handle.server_url == f"http://127.0.0.1:{port}"
        measures = get_json(f"{handle.server_url}/api/v1/datasets/{dataset_id}/metrics"
                            "?n_bootstrap=0")
        assert measures["n"] == 400 and measures["view"] == "positive"  # binary: P(class 1)
        assert measures["metrics"]["ece"] == pytest.approx(
            metrics.expected_calibration_error(frame["y_true"], frame["y_prob"],
                                               view="positive"), abs=1e-12)
        with urllib.request.urlopen(handle.url, timeout=30) as response:
            assert response.status == 200
            assert "calibdash" in response.read().decode()
        # a second call adds its dataset to the same server
        second = calibdash.explore(predictions(120, seed=1), name="second", mode="external")
        assert second.server_url == handle.server_url
        listed = {d["id"]: d for d in get_json(f"{handle.server_url}/api/v1/datasets")}
        assert listed.keys() == {handle.dataset_id, second.dataset_id}
        assert (listed[second.dataset_id]["name"], listed[second.dataset_id]["n_rows"]) == (
            "second", 120)
        [data_dir] = temporary_dirs.iterdir()
    finally:
        handle.stop()
    assert server_threads() == []
    assert not data_dir.exists()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(
            ("127.0.0.1", int(port)), timeout=5):
        pass
    with socket.socket() as listener:  # free again (as a server binds: SO_REUSEADDR)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
    second.stop()  # already stopped with the server: nothing to do


def test_explore_a_file_with_roles_given_into_a_kept_folder(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    predictions(200).rename(columns={"y_true": "outcome", "y_prob": "score"}).to_csv(
        path, index=False)
    handle = calibdash.explore(path, label="outcome", probabilities="score", features=[],
                               mode="external", data_dir=tmp_path / "store")
    try:
        summary = get_json(f"{handle.server_url}/api/v1/datasets/{handle.dataset_id}")
        assert summary["name"] == "scores.csv"
        assert (summary["roles"]["label"], summary["roles"]["probabilities"],
                summary["roles"]["features"]) == ("outcome", ["score"], [])
        with pytest.raises(ValueError, match="already running"):
            calibdash.explore(path, mode="external", data_dir=tmp_path / "elsewhere")
    finally:
        handle.stop()
    assert (tmp_path / "store" / "calibdash.sqlite3").exists()  # a folder given is kept


@pytest.mark.parametrize(("frame", "code"), [
    (predictions(50).drop(columns="y_prob"), "roles_not_found"),
    (predictions(50).assign(y_prob=1.5), "probability_out_of_range"),
    (predictions(50).set_axis(["y_true", "y_prob", "y_prob"], axis=1), "duplicate_columns"),
    (predictions(50).assign(age=[1, "a"] * 25), "unstorable_column"),
])
def test_bad_data_is_refused_before_a_server_starts(
        frame: pd.DataFrame, code: str, temporary_dirs: Path) -> None:
    with pytest.raises(CalibrationInputError) as refused:
        calibdash.explore(frame, mode="external")
    assert refused.value.code == code
    assert server_threads() == []
    assert list(temporary_dirs.iterdir()) == []  # its temporary folder is gone too


def test_an_unknown_mode_is_refused_before_a_server_starts(temporary_dirs: Path) -> None:
    with pytest.raises(ValueError, match="mode must be"):
        calibdash.explore(predictions(50), mode="popup")  # type: ignore[arg-type]
    assert list(temporary_dirs.iterdir()) == []


@pytest.mark.slow
def test_auto_outside_jupyter_opens_a_browser_tab(monkeypatch: pytest.MonkeyPatch,
                                                  temporary_dirs: Path) -> None:
    opened: list[str] = []

    def open_tab(url: str, new: int = 0) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr("webbrowser.open", open_tab)
    handle = calibdash.explore(predictions(80))
    handle.stop()
    assert opened == [handle.url]


@pytest.fixture
def kernel_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernelspec running this interpreter on this checkout (found through JUPYTER_PATH,
    ahead of any user-wide "python3" that may name another Python)."""
    spec = tmp_path / "jupyter" / "kernels" / "calibdash-test"
    spec.mkdir(parents=True)
    python_path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "calibdash test", "language": "python",
        "env": {"PYTHONPATH": python_path}}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # no migration warning from jupyter_core
    return "calibdash-test"


NOTEBOOK_CELLS = [
    """\
import json
import urllib.request

import numpy as np
import pandas as pd

import calibdash

rng = np.random.default_rng(7)
y_prob = rng.uniform(0.05, 0.95, size=500)
frame = pd.DataFrame({"y_true": (rng.uniform(size=500) < y_prob).astype(int),
                      "y_prob": y_prob, "age": rng.normal(50, 10, size=500)})
handle = calibdash.explore(frame)""",
    """\
print(handle.url)
with urllib.request.urlopen(f"{handle.server_url}/api/v1/datasets/{handle.dataset_id}"
                            "/metrics?n_bootstrap=0") as response:
    measures = json.load(response)
print(json.dumps({"n": measures["n"], "ece": measures["metrics"]["ece"]}))""",
    "handle.stop()",
]


@pytest.mark.slow
def test_a_notebook_shows_the_overview_inline(kernel_name: str, tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS])
    NotebookClient(notebook, kernel_name=kernel_name, timeout=180,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()

    explore_cell, print_cell, stop_cell = notebook.cells
    [shown] = explore_cell.outputs
    assert shown.output_type == "display_data"
    iframe = shown.data["text/html"]
    src = re.search(r'<iframe\b[^>]*\bsrc="([^"]+)"', iframe)
    assert src is not None, iframe
    assert OVERVIEW_URL.fullmatch(src.group(1))
    assert 'width="100%"' in iframe

    # the kernel sends stdout in chunks as its buffer is flushed (every 0.2 s): the two
    # lines arrive as one output or two, depending on how long the request between took
    assert {(o.output_type, o.name) for o in print_cell.outputs} == {("stream", "stdout")}
    url, measures = "".join(o.text for o in print_cell.outputs).strip().splitlines()
    assert url == src.group(1)
    rng = np.random.default_rng(7)
    y_prob = rng.uniform(0.05, 0.95, size=500)
    y_true = (rng.uniform(size=500) < y_prob).astype(int)
    assert json.loads(measures) == {
        "n": 500, "ece": pytest.approx(metrics.expected_calibration_error(
            y_true, y_prob, view="positive"), abs=1e-12)}
    assert stop_cell.outputs == []


@pytest.fixture(autouse=True)
def no_server_left() -> Iterator[None]:
    yield
    assert server_threads() == []
