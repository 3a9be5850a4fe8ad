"""Downloads are written in chunks (CSV through Arrow's writer) and read back unchanged."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from app.services.tables import export_bytes, export_chunks


@pytest.fixture
def awkward() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 2_503
    return pd.DataFrame({
        "x": rng.normal(size=n), "tiny": rng.normal(size=n) * 1e-12, "k": rng.integers(-5, 5, n),
        "flag": rng.uniform(size=n) < 0.5,
        "text": rng.choice(["a,b", 'say "hi"', "plain", "=SUM(A1)", "multi\nline"], n),
        "gap": np.where(rng.uniform(size=n) < 0.1, np.nan, rng.uniform(size=n)),
        "mixed": pd.Series(rng.choice([1, "one", 2.5], n), dtype=object),
        "=HYPERLINK(\"x\")": np.arange(n)})


def test_csv_chunks_read_back_as_the_table(awkward) -> None:
    chunks = list(export_chunks(awkward, "csv", rows=1_000))
    assert len(chunks) == 1 + 3  # the header, then three pieces of rows
    back = pd.read_csv(io.BytesIO(b"".join(chunks)))
    assert list(back.columns) == [*awkward.columns[:-1], "'=HYPERLINK(\"x\")"]
    for name in ("x", "tiny", "k", "gap"):
        np.testing.assert_array_equal(back[name].to_numpy(), awkward[name].to_numpy())
    assert back["flag"].tolist() == awkward["flag"].tolist()
    expected_text = awkward["text"].where(awkward["text"] != "=SUM(A1)", "'=SUM(A1)")
    assert back["text"].tolist() == expected_text.tolist()
    assert back["mixed"].astype(str).tolist() == awkward["mixed"].astype(str).tolist()
    assert b"".join(chunks) == export_bytes(awkward, "csv")


def test_parquet_chunks_are_one_file(awkward) -> None:
    frame = awkward.drop(columns="mixed")
    chunks = list(export_chunks(frame, "parquet", rows=1_000))
    assert len(chunks) >= 3
    back = pd.read_parquet(io.BytesIO(b"".join(chunks)))
    pd.testing.assert_frame_equal(back, frame)


def test_an_empty_table_still_has_its_header() -> None:
    assert export_bytes(pd.DataFrame({"a": [], "b": []}), "csv") == b"a,b\n"


_FREED_ON_THREADS = """
import importlib.util, sys, threading
from pathlib import Path
import numpy as np

def rss_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

export = None
if sys.argv[1] != "default":  # the module alone: the app's imports take seconds
    spec = importlib.util.spec_from_file_location("export", sys.argv[1])
    export = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(export)
    assert export.share_one_heap()
base = rss_mib()

def work():
    # a freed mapped block of at most 32 MiB (glibc's DEFAULT_MMAP_THRESHOLD_MAX) raises
    # the dynamic threshold to its size: the next arrays of 6 MiB come from this thread's
    # heap arena, and stay resident there once freed (a larger block leaves it alone)
    np.ones(2 << 20).sum()  # 16 MiB
    held = [(np.ones(6 << 17), np.ones(4 << 10)) for _ in range(30)]
    pins.extend(small for _, small in held)  # small arrays outlive the large ones
    del held

pins = []
threads = [threading.Thread(target=work) for _ in range(2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if export is not None:
    export.release_memory()  # what the server does once no computation is under way
print(rss_mib() - base)
"""


@pytest.mark.slow  # two interpreters start (about 3 s)
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_arrays_freed_on_threads_leave_the_process_once_idle() -> None:
    import ctypes.util
    import os
    import subprocess
    import sys

    if ctypes.util.find_library("c") is None or not hasattr(
            ctypes.CDLL(ctypes.util.find_library("c")), "mallopt"):
        pytest.skip("not glibc")

    from app.services.tables import export

    def grown(mode: str) -> float:
        # without glibc's MALLOC_* tunables: Dask sets MALLOC_TRIM_THRESHOLD_ in the
        # environment of a process that starts a cluster, and any such tunable turns the
        # dynamic threshold off, so the default allocator would keep nothing either
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        out = subprocess.run([sys.executable, "-c", _FREED_ON_THREADS, mode], check=True,
                             capture_output=True, text=True, env=clean)
        return float(out.stdout.split()[-1])

    # 2 threads x 30 arrays of 6 MiB were freed: some stay in the threads' heap arenas
    # (about 60 MiB measured); with the server's one heap, none once it is handed back
    assert grown("default") > 30
    assert grown(export.__file__) < 15


def test_the_server_keeps_numpy_arrays_on_ordinary_pages(monkeypatch) -> None:
    from app.services.tables import ordinary_pages_for_arrays

    _set_madvise_hugepage = np._core.multiarray._set_madvise_hugepage

    before = _set_madvise_hugepage(True)  # (returns the setting it replaces)
    try:
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")  # the operator's choice stands
        assert not ordinary_pages_for_arrays()
        assert _set_madvise_hugepage(True)
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        assert ordinary_pages_for_arrays()
        assert not _set_madvise_hugepage(True)  # huge pages were off
    finally:
        _set_madvise_hugepage(before)
