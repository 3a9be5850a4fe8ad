"""Files people ordinarily have, read as they meant them: a spreadsheet's CSV from a
European locale (semicolons, decimal commas) and a table with a few missing probabilities."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from app.cli import main as cli_main
from tests.app.test_api import assert_error, upload

N_ROWS = 3000
DECIMAL_NOTE = "read with ',' as the decimal mark"
#: Rows of the file whose probability is missing.
MISSING = [3, 100, 900, 1500, 2999]


@pytest.fixture
def frame(shared_data) -> pd.DataFrame:
    """3,000 rows of the binary example, probabilities rounded as a spreadsheet shows them."""
    rows = pd.read_csv(shared_data / "default_nb.csv").head(N_ROWS)
    rows["y_prob"] = rows["y_prob"].round(4)
    return rows


def metrics(client, dataset: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    response = client.get(f"/api/v1/datasets/{dataset}/metrics", params={"n_bootstrap": 0})
    assert response.status_code == 200, response.text
    return dict(response.json()["metrics"])


def stage(client, content: bytes, filename: str = "predictions.csv") -> dict:  # type: ignore[no-untyped-def]
    response = client.post("/api/v1/uploads", files={"file": (filename, content)})
    assert response.status_code == 201, response.text
    return dict(response.json())


# -- decimal commas ---------------------------------------------------------------


def test_a_semicolon_file_with_decimal_commas_reads_like_the_same_data_written_normally(
        client, frame) -> None:
    european = frame.to_csv(index=False, sep=";", decimal=",").encode()
    assert b"0,3991" in european or b";0," in european  # numbers like 0,3991
    normal = upload(client, frame.to_csv(index=False).encode(), "normal.csv").json()
    read = upload(client, european, "european.csv")
    assert read.status_code == 201, read.text
    dataset = read.json()
    assert dataset["n_rows"] == N_ROWS and dataset["roles"] == normal["roles"]
    assert dataset["feature_kinds"] == normal["feature_kinds"]
    assert any(w.startswith(DECIMAL_NOTE) for w in dataset["warnings"])
    assert not any(DECIMAL_NOTE in w for w in normal["warnings"])
    assert metrics(client, dataset["id"]) == metrics(client, normal["id"])
    # the roles screen shows the staged upload's notes: the decimal mark is among them
    staged = stage(client, european)
    assert any(w.startswith(DECIMAL_NOTE) for w in staged["warnings"])
    assert staged["dtypes"]["y_prob"] == "float64" and staged["dtypes"]["balance"] == "float64"


def test_a_semicolon_file_with_decimal_points_still_works(client, frame) -> None:
    normal = upload(client, frame.to_csv(index=False).encode(), "normal.csv").json()
    semicolons = upload(client, frame.to_csv(index=False, sep=";").encode(), "semi.csv")
    assert semicolons.status_code == 201, semicolons.text
    dataset = semicolons.json()
    assert not any(DECIMAL_NOTE in w for w in dataset["warnings"])
    assert metrics(client, dataset["id"]) == metrics(client, normal["id"])


def test_dots_between_thousands_are_read_with_a_decimal_comma(client) -> None:
    text = "y_true;y_prob;income\n0;0,25;1.234,5\n1;0,75;12.000,25\n0;0,1;987,5\n1;0,9;2.500\n"
    staged = stage(client, text.encode())
    assert staged["preview"][0]["income"] == 1234.5 and staged["preview"][3]["income"] == 2500
    assert staged["warnings"][0].startswith(f"{DECIMAL_NOTE} and '.' between thousands")


def test_a_date_with_dots_is_not_read_as_thousands(client) -> None:
    """pandas would read 01.02.2024 as 1022024 with '.' between thousands: the dots are
    not taken for thousands, so 1.234,5 stays text rather than a wrong number."""
    text = "y_true;y_prob;income;day\n0;0,25;1.234,5;01.02.2024\n1;0,75;2,5;02.02.2024\n"
    staged = stage(client, text.encode())
    assert staged["warnings"][0].startswith(f"{DECIMAL_NOTE}:")
    assert staged["preview"][0]["day"] == "01.02.2024" and staged["preview"][1]["y_prob"] == 0.75
    assert staged["preview"][0]["income"] == "1.234,5" and staged["dtypes"]["income"] == "str"


@pytest.mark.parametrize("text", [
    # both marks in one file: which is the decimal mark cannot be told, so neither is guessed
    "y_true;y_prob;amount\n0;0.25;1,5\n1;0.75;2,5\n0;0.5;3,5\n",
    # 1,234 is 1.234 in one locale and 1234 in another
    "y_true;y_prob;amount\n0;1;1,234\n1;0;2,500\n0;1;3,125\n",
])
def test_an_ambiguous_file_is_not_misread(client, text) -> None:
    staged = stage(client, text.encode())
    assert not any(DECIMAL_NOTE in w for w in staged["warnings"])
    assert staged["dtypes"]["amount"] == "str"  # left as written, never 1.5 nor 1234
    assert staged["preview"][0]["amount"] == text.split("\n")[1].split(";")[2]


def test_a_comma_separated_file_is_never_read_with_decimal_commas(client) -> None:
    staged = stage(client, b'y_true,y_prob,amount\n0,0.25,"1,5"\n1,0.75,"2,5"\n')
    assert staged["warnings"] == [] and staged["preview"][0]["amount"] == "1,5"


# -- rows missing a probability ----------------------------------------------------


@pytest.fixture
def with_missing(frame) -> pd.DataFrame:
    """Five missing probabilities, and one missing feature value on another row."""
    rows = frame.copy()
    rows.loc[MISSING, "y_prob"] = np.nan
    rows.loc[7, "balance"] = np.nan
    return rows


def test_missing_probabilities_are_refused_with_the_rows_and_the_option(
        client, with_missing) -> None:
    error = assert_error(upload(client, with_missing.to_csv(index=False).encode()), 422,
                         "missing_values")
    assert error["details"] == {"column": "y_prob", "rows": MISSING, "count": 5}
    assert "'y_prob'" in error["message"] and "rows 3, 100, 900, 1500, 2999" in error["message"]
    assert "drop_missing" in error["message"]


def test_drop_missing_leaves_out_the_rows_and_says_so(client, with_missing, frame) -> None:
    response = upload(client, with_missing.to_csv(index=False).encode(), drop_missing="true")
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["n_rows"] == N_ROWS - 5 and dataset["n_left_out"] == 5
    assert dataset["warnings"][0].startswith(
        "5 rows left out (missing label or probability): rows 3, 100, 900, 1500, 2999")
    assert any("balance (1)" in w for w in dataset["warnings"])  # a missing feature stays
    assert client.get(f"/api/v1/datasets/{dataset['id']}").json()["n_left_out"] == 5
    kept = with_missing.drop(index=MISSING)
    same = upload(client, kept.to_csv(index=False).encode(), "kept.csv").json()
    assert same["n_rows"] == N_ROWS - 5 and same["n_left_out"] == 0
    assert metrics(client, dataset["id"]) == metrics(client, same["id"])
    # the other pages read the stored table's columns row for row with the prediction set
    recalibration = client.post(f"/api/v1/datasets/{dataset['id']}/recalibrations",
                                json={"method": "platt"}).json()["id"]
    download = client.get(f"/api/v1/recalibrations/{recalibration}/download")
    corrected = pd.read_csv(io.BytesIO(download.content))
    assert len(corrected) == N_ROWS - 5 and not corrected["y_prob"].isna().any()
    np.testing.assert_array_equal(corrected["y_prob"], kept["y_prob"])


def test_a_staged_upload_is_confirmed_with_drop_missing(client, with_missing) -> None:
    staged = stage(client, with_missing.to_csv(index=False).encode())
    assert staged["missing_values"] == {"y_prob": 5, "balance": 1}
    assert staged["inferred_missing_rows"] == 5  # what the roles screen's tick counts
    confirm = f"/api/v1/uploads/{staged['upload_id']}/confirm"
    error = assert_error(client.post(confirm, json={}), 422, "missing_values")
    assert "drop_missing" in error["message"]
    confirmed = client.post(confirm, json={"drop_missing": True})  # the upload is still staged
    assert confirmed.status_code == 201, confirmed.text
    assert confirmed.json()["n_rows"] == N_ROWS - 5 and confirmed.json()["n_left_out"] == 5


def test_missing_labels_are_left_out_too(client, frame) -> None:
    rows = frame.copy()
    rows["y_true"] = rows["y_true"].astype(float)
    rows.loc[[10, 20], "y_true"] = np.nan
    rows.loc[[20, 30], "y_prob"] = np.nan
    dataset = upload(client, rows.to_csv(index=False).encode(), drop_missing="true").json()
    assert dataset["n_rows"] == N_ROWS - 3 and dataset["n_left_out"] == 3


def test_report_refuses_then_leaves_out_with_drop_missing(with_missing, tmp_path,
                                                          capsys) -> None:
    path = tmp_path / "missing.csv"
    with_missing.to_csv(path, index=False)
    assert cli_main(["report", str(path), "--n-bootstrap", "0"]) == 2
    error = capsys.readouterr().err
    assert "'y_prob'" in error and "drop_missing" in error
    out = tmp_path / "report.json"
    assert cli_main(["report", str(path), "--n-bootstrap", "0", "--drop-missing", "--out",
                     str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["n_rows"] == N_ROWS - 5 and report["n_left_out"] == 5
    assert report["warnings"][0].startswith("5 rows left out (missing label or probability)")
    assert "2,995 rows (5 left out: missing label or probability)" in capsys.readouterr().out
    assert cli_main(["report", str(path), "--engine", "dask", "--drop-missing"]) == 2
