"""Downloads are written in chunks (CSV through Arrow's writer) and read back unchanged."""

from __future__ import annotations

import io

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
