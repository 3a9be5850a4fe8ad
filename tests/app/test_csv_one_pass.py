"""Comma-separated files of numbers are read in one pass: the frame must be the chunked
reader's.

Every file here is read twice by :func:`app.services.tables.load_table`, once as it is
and once with the one-pass path turned off (pandas' chunked reader, the reference), and
the frames must be equal cell for cell, dtypes and names included. The files with
anything but int64 and float64 columns must not take the one-pass path at all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from app.services.tables import TableLimits, _csv, _one_pass, load_table

NUMBERS = {
    "ints and floats": "y_true,y_prob,x\n0,0.25,1.5\n1,0.75,-2e-3\n1,0.5,3\n",
    "missing markers": "y_true,y_prob,x\n0,0.25,NA\n1,,nan\n1,0.5,None\n0,0.1,<NA>\n1,0.3,2.5\n",
    "ints with a gap": "y,p,n\n0,0.2,1\n1,0.8,\n0,0.4,7\n",
    "quoted numbers": 'y,"p",q\n0,"0.25",1\n1,"0.75",2\n',
    "infinities": "y,p,x\n0,0.2,inf\n1,0.8,-inf\n",
    "crlf": "y,p\r\n0,0.2\r\n1,0.8\r\n",
    "hard floats": "y,p\n" + "".join(
        f"{k % 2},{float(v)!r}\n" for k, v in enumerate(
            np.random.default_rng(0).normal(size=2_000) * 10.0 ** np.arange(-22, 18).repeat(50))),
    "bom": "\ufeffy,p\n0,0.2\n1,0.8\n",
    "empty column": "y,p,e\n0,0.2,\n1,0.8,\n",
    "a float past int64": "y,p,x\n0,0.2,1e300\n1,0.8,2.5\n",
    "past int64 beside missing values and infinities":
        "y,p,x\n0,0.2,\n1,0.8,-1e19\n0,0.5,inf\n",
    "blank line first": "\ny,p\n0,0.2\n1,0.8\n",
}
OTHERS = {
    "text": "y,p,name\n0,0.2,a\n1,0.8,b\n",
    "booleans": "y,p,flag\n0,0.2,True\n1,0.8,False\n",
    "huge integers": "y,p,id\n0,0.2,99999999999999999999\n1,0.8,2\n",
    "unsigned": "y,p,id\n0,0.2,18446744073709551615\n1,0.8,2\n",
    "unnamed column": "y,p,\n0,0.2,1\n1,0.8,2\n",
    "short row": "y,p,x\n0,0.2,1\n1,0.8\n",
    "dates": "y,p,when\n0,0.2,2024-01-02\n1,0.8,2024-01-03\n",
}


def read(path: Path, *, one_pass: bool, monkeypatch: pytest.MonkeyPatch,
         max_rows: int = 10_000) -> tuple[pd.DataFrame, bool]:
    taken = []
    original = _csv.numbers_in_one_pass

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        frame = original(*args, **kwargs) if one_pass else None
        taken.append(frame is not None)
        return frame

    monkeypatch.setattr(_csv, "numbers_in_one_pass", spy)
    frame = load_table(path, path.name, limits=TableLimits(max_rows=max_rows)).frame
    return frame, any(taken)


@pytest.mark.parametrize("name", list(NUMBERS))
def test_numbers_take_the_one_pass_path_and_read_as_the_chunked_reader_reads_them(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "numbers.csv"
    path.write_text(NUMBERS[name], newline="")
    fast, took = read(path, one_pass=True, monkeypatch=monkeypatch)
    reference, _ = read(path, one_pass=False, monkeypatch=monkeypatch)
    assert took
    pd.testing.assert_frame_equal(fast, reference, check_exact=True)
    # and pandas' own one-pass reader agrees (the reference is its chunked reader)
    pd.testing.assert_frame_equal(fast, pd.read_csv(path), check_exact=True)


@pytest.mark.parametrize("name", list(OTHERS))
def test_anything_but_numbers_is_left_to_pandas(name: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "other.csv"
    path.write_text(OTHERS[name], newline="", encoding="utf-8")
    try:
        fast, took = read(path, one_pass=True, monkeypatch=monkeypatch)
    except ValueError as error:  # refused: the same refusal as pandas' path
        with pytest.raises(ValueError) as reference_error:
            read(path, one_pass=False, monkeypatch=monkeypatch)
        assert str(error) == str(reference_error.value)
        return
    reference, _ = read(path, one_pass=False, monkeypatch=monkeypatch)
    assert not took
    pd.testing.assert_frame_equal(fast, reference, check_exact=True)


def test_the_row_limit_holds_on_the_one_pass_path(tmp_path: Path) -> None:
    path = tmp_path / "tall.csv"
    path.write_text("y,p\n" + "0,0.5\n" * 101)
    with pytest.raises(ValueError, match="more than 100 rows") as caught:
        load_table(path, "tall.csv", limits=TableLimits(max_rows=100))
    assert caught.value.code == "table_too_large"  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["text", "booleans", "dates", "short row"])
def test_a_file_whose_first_rows_are_not_numbers_is_parsed_once(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first rows already show the file is not numbers only: the one-pass reader never
    reads it (it would read the whole file only for the chunked reader to read it again)."""
    path = tmp_path / "other.csv"
    path.write_text(OTHERS[name], newline="", encoding="utf-8")

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the one-pass reader read a file the chunked reader then read")

    monkeypatch.setattr(_one_pass, "_read_whole", refuse)
    try:
        frame = load_table(path, path.name, limits=TableLimits(max_rows=10_000)).frame
    except ValueError as error:  # refused by pandas' path, as before
        assert "one-pass" not in str(error)
        return
    pd.testing.assert_frame_equal(frame, pd.read_csv(path), check_exact=True)


def test_text_past_the_first_rows_still_reads_as_pandas_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "late_text.csv"
    path.write_text("y,p,x\n" + "0,0.25,1\n" * 20_000 + "1,0.5,late\n")
    frame = load_table(path, path.name, limits=TableLimits(max_rows=100_000)).frame
    pd.testing.assert_frame_equal(frame, pd.read_csv(path), check_exact=True)


@pytest.mark.parametrize("size", [20_000, 200_000])
def test_types_that_change_late_in_a_long_file_read_as_the_chunked_reader_reads_them(
        size: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pandas infers each column's type per block (several at 200,000 rows, read on
    threads from about 5 MB) and merges them. Integer columns that turn float (2.5, or a
    whole 1.0) or gain a missing value late come out float64, as the chunked reader
    reads them; a feature that turns to text late, or a column with a gap first and an
    integer past 64 bits later, goes to the chunked reader."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"y": rng.integers(0, 2, size), "p": rng.uniform(size=size).round(6),
                          "k": rng.integers(-5, 5, size).astype(object),
                          "j": rng.integers(-5, 5, size).astype(object),
                          "n": rng.integers(0, 1000, size).astype(object)})
    frame.loc[size - 5_000, "k"] = 2.5
    frame.loc[size - 4_000, "j"] = "1.0"
    frame.loc[size - 3_000, "n"] = None
    text, huge = frame.copy(), frame.copy()
    text.loc[size - 10, "n"] = "x"
    huge.loc[5, "j"] = None
    huge.loc[size - 10, "j"] = "12345678901234567890123"
    cases = {"late floats and gaps": (frame, True), "late text": (text, False),
             "a gap, then 23 digits": (huge, False)}
    for name, (table, one_pass) in cases.items():
        path = tmp_path / f"{name}.csv"
        table.to_csv(path, index=False)
        fast, took = read(path, one_pass=True, monkeypatch=monkeypatch, max_rows=size)
        reference, _ = read(path, one_pass=False, monkeypatch=monkeypatch, max_rows=size)
        assert took == one_pass, name
        pd.testing.assert_frame_equal(fast, reference, check_exact=True)
    fast, _ = read(tmp_path / "late floats and gaps.csv", one_pass=True,
                   monkeypatch=monkeypatch, max_rows=size)
    assert list(map(str, fast.dtypes)) == ["int64", "float64", "float64", "float64", "float64"]
