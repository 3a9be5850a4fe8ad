"""Hostile uploads through REST: repeated headers, bombs, damaged files, nested Parquet,
formula-like column names. Each answers a 4xx a person can act on, quickly and in little
memory, and never names the server's temporary files."""

from __future__ import annotations

import gzip
import io
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services.tables import TableLimits, load_table
from tests.app.test_api import assert_error, upload

PAGE = 4096


def predictions(n_rows: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y_prob = rng.uniform(0.05, 0.95, n_rows)
    return pd.DataFrame({"y_true": (rng.uniform(size=n_rows) < y_prob).astype(int),
                         "y_prob": y_prob, "age": rng.integers(20, 70, n_rows),
                         "split": np.where(np.arange(n_rows) % 2, "test", "calibration")})


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


def parquet_bytes(table: pa.Table | pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table if isinstance(table, pa.Table) else pa.Table.from_pandas(table),
                   buffer)
    return buffer.getvalue()


def gzip_bomb(header: bytes, line: bytes, n_members: int) -> bytes:
    """A gzip of ``header`` then ``n_members`` MiB of ``line``: gzip members concatenate, so
    one compressed MiB repeated is a large file at a tiny fraction of the cost to build."""
    member = gzip.compress(line * ((1 << 20) // len(line)), compresslevel=9)
    return gzip.compress(header) + member * n_members


def stage(client: TestClient, content: bytes, filename: str) -> Any:
    return client.post("/api/v1/uploads", files={"file": (filename, content)})


def peak_rss_growth(action: Callable[[], Any]) -> tuple[Any, int]:
    """``action()`` and how far the resident memory rose above its start while it ran."""
    statm = Path("/proc/self/statm")
    start = int(statm.read_text().split()[1]) * PAGE
    peak = start
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, int(statm.read_text().split()[1]) * PAGE)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = action()
    finally:
        done.set()
        sampler.join()
    return result, peak - start


@pytest.fixture
def limited_client(settings_factory) -> Iterator[Callable[..., TestClient]]:  # type: ignore[no-untyped-def]
    """A factory of clients of an app with the given settings (closed after the test)."""
    with ExitStack() as clients:
        yield lambda **settings: clients.enter_context(TestClient(
            create_app(settings_factory(**settings)), raise_server_exceptions=False))


@pytest.fixture
def recalibration(client) -> str:  # type: ignore[no-untyped-def]
    dataset = upload(client, csv_bytes(predictions())).json()["id"]
    response = client.post(f"/api/v1/datasets/{dataset}/recalibrations", json={"method": "platt"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def apply(client: TestClient, recalibration: str, content: bytes, filename: str) -> Any:
    return client.post(f"/api/v1/recalibrations/{recalibration}/apply",
                       files={"file": (filename, content)})


def assert_no_server_path(message: str, client: TestClient) -> None:
    data_dir = str(client.app.state.services.settings.data_dir)  # type: ignore[attr-defined]
    assert ".upload-" not in message and data_dir not in message and "/tmp" not in message


# -- repeated and too many header names -------------------------------------------------
def test_five_million_repeated_names_are_refused_in_well_under_two_seconds(client) -> None:
    content = b"x," * 5_000_000 + b"x\n1\n"  # 10 MB of header
    started = time.perf_counter()
    response = stage(client, content, "wide.csv")
    elapsed = time.perf_counter() - started
    error = assert_error(response, 422, "duplicate_columns")
    assert "'x'" in error["message"] and "wide.csv" in error["message"]
    assert error["details"]["column"] == "x"
    assert elapsed < 2.0, elapsed


def test_twenty_thousand_repeated_names_are_refused(client) -> None:
    content = b",".join([b"x"] * 20_000) + b"\n" + b",".join([b"1"] * 20_000) + b"\n"
    started = time.perf_counter()
    error = assert_error(upload(client, content, "dup.csv"), 422, "duplicate_columns")
    assert time.perf_counter() - started < 1.0
    assert "'x' appears 20,000 times" in error["message"]
    assert client.get("/api/v1/datasets").json() == []


def test_repeated_names_message_shows_the_first_few_and_counts_the_rest(client) -> None:
    names = [f"c{k}" for k in range(8)] + ["y_true", "y_prob"]
    header = ",".join(names + names[:8]).encode()
    error = assert_error(upload(client, header + b"\n" + b"1," * 17 + b"1\n"), 422,
                         "duplicate_columns")
    assert "repeats 8 column names" in error["message"]
    assert "'c0', 'c1', 'c2', 'c3', 'c4' and 3 more" in error["message"]


def test_too_many_columns_names_the_setting(limited_client) -> None:
    small_client = limited_client(max_columns=100)
    header = ",".join(f"c{k}" for k in range(101)).encode()
    error = assert_error(upload(small_client, header + b"\n" + b"1," * 100 + b"1\n"), 422,
                         "too_many_columns")
    assert "101 columns" in error["message"] and "CALIBDASH_MAX_COLUMNS" in error["message"]


def test_header_longer_than_the_bound_is_refused_without_reading_it_all(client) -> None:
    content = ",".join(f"column_{k}" for k in range(1_000_000)).encode() + b"\n"  # 14 MB
    started = time.perf_counter()
    error = assert_error(stage(client, content, "long.csv"), 422, "too_many_columns")
    assert time.perf_counter() - started < 2.0
    assert "longer than" in error["message"] and "CALIBDASH_MAX_COLUMNS" in error["message"]


# -- bombs ------------------------------------------------------------------------------
def test_gzip_bomb_is_refused_early_in_little_memory(limited_client) -> None:
    small_client = limited_client(max_decompressed_bytes=8 << 20)
    bomb = gzip_bomb(b"y_true,y_prob\n", b"0,0.25\n", 1024)  # 1 GiB once decompressed
    assert len(bomb) < 3 << 20
    started = time.perf_counter()
    response, growth = peak_rss_growth(lambda: stage(small_client, bomb, "bomb.csv.gz"))
    elapsed = time.perf_counter() - started
    error = assert_error(response, 422, "table_too_large")
    assert "CALIBDASH_MAX_DECOMPRESSED_BYTES" in error["message"]
    assert "bomb.csv.gz" in error["message"]
    assert elapsed < 2.0, elapsed
    assert growth < 150 << 20, growth


def test_row_limit_refuses_a_bomb_under_the_byte_limit(limited_client) -> None:
    small_client = limited_client(max_decompressed_bytes=8 << 20, max_rows=50_000)
    bomb = gzip_bomb(b"y_true,y_prob\n", b"0,0.25\n", 2)  # 300,000 rows in 2 MiB
    error = assert_error(upload(small_client, bomb, "rows.csv.gz"), 422, "table_too_large")
    assert "50,000 rows" in error["message"] and "CALIBDASH_MAX_ROWS" in error["message"]


def test_default_row_limit_refuses_twenty_million_and_one_rows(client) -> None:
    bomb = gzip_bomb(b"y_true\n", b"1\n", 39)  # 20.4 M rows, 40 kB compressed
    assert len(bomb) < 100_000
    error = assert_error(stage(client, bomb, "tall.csv.gz"), 422, "table_too_large")
    assert "20,000,000 rows" in error["message"]


def test_parquet_over_the_row_limit_is_refused_from_its_footer(limited_client) -> None:
    small_client = limited_client(max_rows=50_000)
    content = parquet_bytes(pd.DataFrame({"y_true": np.zeros(60_000, dtype=int),
                                          "y_prob": np.full(60_000, 0.5)}))
    error = assert_error(upload(small_client, content, "tall.parquet"), 422, "table_too_large")
    assert "60,000 rows" in error["message"] and "CALIBDASH_MAX_ROWS" in error["message"]


# -- damaged files ----------------------------------------------------------------------
def _damaged_gzips() -> dict[str, bytes]:
    good = gzip.compress(csv_bytes(predictions(2_000)))
    zeroed = bytearray(good)
    zeroed[30:70] = b"\x00" * 40  # zlib.error: used to answer 500
    return {"truncated": good[: len(good) // 2], "damaged": bytes(zeroed),
            "bad header": b"\x1f\x8b" + b"junk" * 10, "bad checksum": good[:-8] + b"\0" * 8}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(_damaged_gzips()))
def test_damaged_gzip_is_422_on_upload_and_apply(client, recalibration, kind) -> None:
    content = _damaged_gzips()[kind]
    for response in (stage(client, content, "p.csv.gz"), upload(client, content, "p.csv.gz"),
                     apply(client, recalibration, content, "p.csv.gz")):
        error = assert_error(response, 422, "unreadable_file")
        assert "'p.csv.gz' is gzip-compressed but" in error["message"]
        assert "upload the complete file" in error["message"]
        if kind == "damaged":
            assert "invalid" in error["message"]
        assert_no_server_path(error["message"], client)
    assert client.get("/api/v1/health").status_code == 200


def _truncated_parquets() -> dict[str, bytes]:
    good = parquet_bytes(predictions())
    return {"cut in half": good[: len(good) // 2],
            "footer claims more": good[: len(good) // 2] + b"PAR1",
            "cut at the end": good[:-30]}


@pytest.mark.parametrize("kind", list(_truncated_parquets()))
def test_truncated_parquet_is_422_without_the_temporary_path(client, recalibration,
                                                             kind) -> None:
    content = _truncated_parquets()[kind]
    for response in (stage(client, content, "t.parquet"), upload(client, content, "t.parquet"),
                     apply(client, recalibration, content, "t.parquet")):
        error = assert_error(response, 422, "unreadable_file")
        assert "'t.parquet' is not a readable Parquet file" in error["message"]
        assert_no_server_path(error["message"], client)


# -- nested Parquet columns -------------------------------------------------------------
def nested_parquet() -> bytes:
    table = pa.Table.from_pandas(predictions(), preserve_index=False)
    n_rows = table.num_rows
    table = table.append_column("tags", pa.array([[k, k + 1] for k in range(n_rows)]))
    return parquet_bytes(table.append_column(
        "meta", pa.array([{"source": "a", "weight": 1.0}] * n_rows)))


@pytest.mark.slow
def test_nested_parquet_columns_are_dropped_with_a_warning(client) -> None:
    staged = stage(client, nested_parquet(), "nested.parquet")
    assert staged.status_code == 201, staged.text
    body = staged.json()
    assert body["columns"] == ["y_true", "y_prob", "age", "split"]
    assert len(body["warnings"]) == 1 and "'tags', 'meta'" in body["warnings"][0]
    confirmed = client.post(f"/api/v1/uploads/{body['upload_id']}/confirm", json={})
    assert confirmed.status_code == 201, confirmed.text
    assert "'tags', 'meta'" in confirmed.json()["warnings"][0]

    dataset = upload(client, nested_parquet(), "nested.parquet")
    assert dataset.status_code == 201, dataset.text
    summary = client.get(f"/api/v1/datasets/{dataset.json()['id']}").json()
    assert summary["roles"]["features"] == ["age"]
    assert any("nested values" in w and "'tags'" in w for w in summary["warnings"])
    ranking = client.get(f"/api/v1/datasets/{summary['id']}/variables",
                         params={"n_permutations": 0})
    assert ranking.status_code == 200, ranking.text
    assert [row["variable"] for row in ranking.json()["variables"]] == ["age"]


def test_a_role_given_to_a_nested_column_is_refused_by_name(client) -> None:
    error = assert_error(upload(client, nested_parquet(), "nested.parquet",
                                label="y_true", probabilities="y_prob", features="age,tags"),
                         422, "nested_columns")
    assert "'tags'" in error["message"] and error["details"]["column"] == "tags"
    staged = stage(client, nested_parquet(), "nested.parquet").json()
    error = assert_error(client.post(f"/api/v1/uploads/{staged['upload_id']}/confirm",
                                     json={"label": "meta"}), 422, "nested_columns")
    assert "'meta'" in error["message"]


def test_a_nested_label_column_is_named_when_roles_are_not_found(client) -> None:
    table = pa.table({"y_true": pa.array([[0], [1]] * 50), "y_prob": [0.2, 0.7] * 50})
    error = assert_error(upload(client, parquet_bytes(table), "nested.parquet"), 422,
                         "roles_not_found")
    assert "Columns of nested values were left out: 'y_true'" in error["message"]


# -- formula-like column names ----------------------------------------------------------
def test_formula_like_column_names_are_escaped_in_downloads_and_apply(client) -> None:
    risky = '=HYPERLINK("http://x")'
    frame = predictions().rename(columns={"age": risky})
    frame["note"] = ["@SUM(1)"] + ["ok"] * (len(frame) - 1)
    dataset = upload(client, csv_bytes(frame)).json()["id"]
    fitted = client.post(f"/api/v1/datasets/{dataset}/recalibrations",
                         json={"method": "platt"}).json()
    downloaded = client.get(f"/api/v1/recalibrations/{fitted['id']}/download",
                            params={"format": "csv"})
    applied = apply(client, fitted["id"], csv_bytes(frame.drop(columns=["y_true", "split"])),
                    "new.csv")
    for response in (downloaded, applied):
        assert response.status_code == 200, response.text
        header = response.text.splitlines()[0]
        assert "\"'=HYPERLINK(\"\"http://x\"\")\"" in header, header
        assert not any(cell.startswith(("=", "@", "+", "-"))
                       for cell in pd.read_csv(io.StringIO(response.text)).columns)
        assert "'@SUM(1)" in response.text
    parquet = client.get(f"/api/v1/recalibrations/{fitted['id']}/download",
                         params={"format": "parquet"})
    assert risky in pd.read_parquet(io.BytesIO(parquet.content)).columns  # data, not a sheet


# -- cancellation -----------------------------------------------------------------------
def test_parsing_stops_when_the_server_is_shutting_down(client) -> None:
    client.app.state.services.stopping.set()  # type: ignore[attr-defined]
    error = assert_error(upload(client, csv_bytes(predictions())), 422, "cancelled")
    assert "shutting down" in error["message"]


def test_stop_event_interrupts_a_parse_in_progress(tmp_path) -> None:
    path = tmp_path / "big.csv.gz"
    path.write_bytes(gzip_bomb(b"y_true,y_prob\n", b"0,0.25\n", 200))
    stop = threading.Event()
    timer = threading.Timer(0.05, stop.set)
    timer.start()
    started = time.perf_counter()
    with pytest.raises(ValueError, match="cancelled") as caught:
        load_table(path, "big.csv.gz", stop=stop)
    timer.cancel()
    assert caught.value.code == "cancelled"  # type: ignore[attr-defined]
    assert time.perf_counter() - started < 1.0


# -- chunked parsing keeps one-pass semantics ---------------------------------------------
def test_a_column_turning_to_text_in_a_later_chunk_is_text_throughout(tmp_path,
                                                                       monkeypatch) -> None:
    monkeypatch.setattr("app.services.tables._csv._CHUNK_CELLS", 200)  # 100 rows per chunk
    lines = ["y_true,y_prob,code"] + [f"{k % 2},0.5,{k}" for k in range(250)] + ["1,0.5,x9"]
    path = tmp_path / "mixed.csv"
    path.write_text("\n".join(lines) + "\n")
    frame = load_table(path, "mixed.csv", limits=TableLimits(max_rows=1_000)).frame
    assert len(frame) == 251 and pd.api.types.is_string_dtype(frame["code"])
    assert frame["code"].iloc[[0, 249, 250]].tolist() == ["0", "249", "x9"]
    assert pd.api.types.is_integer_dtype(frame["y_true"])


@pytest.mark.parametrize("where", ["upload", "staged"])
def test_whole_numbers_past_64_bits_are_kept_as_text_not_a_500(client, tmp_path: Path,
                                                               where: str) -> None:
    """A column of 20-digit numbers (account or order numbers): pandas keeps them as Python
    integers, which Parquet cannot store, and the upload answered 500. They are read as
    text, exactly as written, and the dataset says so."""
    frame = predictions(300).astype({"age": object})
    frame.loc[250, "age"] = "99999999999999999999"
    content = csv_bytes(frame)
    path = tmp_path / "ids.csv"
    path.write_bytes(content)
    read = load_table(path, "ids.csv").frame["age"]
    assert read.iloc[250] == "99999999999999999999" and read.iloc[0] == str(frame["age"].iloc[0])
    if where == "staged":
        staged = stage(client, content, "ids.csv")
        assert staged.status_code == 201, staged.text
        assert any("too large for 64 bits" in w for w in staged.json()["warnings"])
        response = client.post(f"/api/v1/uploads/{staged.json()['upload_id']}/confirm", json={})
    else:
        response = upload(client, content, "ids.csv")
    assert response.status_code == 201, response.text
    assert any("column 'age' holds whole numbers too large for 64 bits" in w
               for w in response.json()["warnings"])
