"""``calibdash recalibrate`` and ``calibdash apply``: files in, corrected files and models out."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from app.cli import main
from calibcore.recalibration import Recalibrator

PROBA = [f"proba_{k}" for k in range(10)]
CORRECTED = [f"calibrated_proba_{k}" for k in range(10)]


def test_recalibrate_writes_the_corrected_file_and_a_model_that_reproduces_it(
        shared_data, tmp_path, capsys) -> None:
    out, model_path = tmp_path / "digits-calibrated.csv", tmp_path / "lece.json"
    code = main(["recalibrate", str(shared_data / "digits_svm.csv"), "--method", "lece",
                 "--params", '{"neighborhood_size": 0.1, "threshold": 0.02}', "--out", str(out),
                 "--model-out", str(model_path)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "fitted lece on 573 rows" in printed and "held-out test rows" in printed
    frame = pd.read_csv(out)
    original = pd.read_csv(shared_data / "digits_svm.csv")
    assert list(frame.columns) == [*original.columns, *CORRECTED] and len(frame) == 1197
    document = json.loads(model_path.read_text())
    assert document["inputs"]["probability_columns"] == PROBA
    assert document["params"]["neighborhood_size"] == 0.1
    proba = original[PROBA].to_numpy()
    expected = Recalibrator.from_json(document).predict_proba(
        proba / proba.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(frame[CORRECTED].to_numpy(), expected, rtol=0, atol=1e-12)
    applied = tmp_path / "applied.csv"
    assert main(["apply", str(model_path), str(shared_data / "digits_svm.csv"), "--out",
                 str(applied)]) == 0
    assert applied.read_bytes() == out.read_bytes()
    nll = {line.split(":")[0].strip(): line.split(":")[1].split() for line in printed.splitlines()
           if line.strip().startswith("nll:")}
    assert float(nll["nll"][1]) < float(nll["nll"][0])


def test_variable_tree_then_apply_to_an_unlabelled_parquet_file(shared_data, tmp_path,
                                                                capsys) -> None:
    source = pd.read_csv(shared_data / "default_nb.csv")
    out, model_path = tmp_path / "nb.parquet", tmp_path / "tree.json"
    assert main(["recalibrate", str(shared_data / "default_nb.csv"), "--method",
                 "variable_tree", "--features", "balance", "--out", str(out), "--model-out",
                 str(model_path)]) == 0
    fitted = pd.read_parquet(out)
    assert list(fitted.columns[-2:]) == ["calibrated_proba_0", "calibrated_proba_1"]

    unlabelled = source.drop(columns=["y_true", "split"]).sample(frac=1, random_state=3)
    unlabelled.to_parquet(tmp_path / "new.parquet", index=False)
    applied_path = tmp_path / "applied.csv"
    assert main(["apply", str(model_path), str(tmp_path / "new.parquet"), "--out",
                 str(applied_path)]) == 0
    assert "applied variable_tree to 7,000 rows" in capsys.readouterr().out
    applied = pd.read_csv(applied_path)
    model = Recalibrator.from_json(json.loads(model_path.read_text()))
    expected = model.predict_proba(unlabelled["y_prob"].to_numpy(),
                                   features=unlabelled[["balance"]].to_numpy())
    np.testing.assert_allclose(applied[["calibrated_proba_0", "calibrated_proba_1"]].to_numpy(),
                               expected, rtol=0, atol=1e-12)
    # The same rows, shuffled back, give what the fit wrote for them.
    by_row = applied.set_index(unlabelled.index).sort_index()
    np.testing.assert_allclose(by_row["calibrated_proba_1"], fitted["calibrated_proba_1"],
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("arguments, message", [
    (["--method", "magic"], "unknown method 'magic'"),
    (["--method", "platt", "--params", "{oops"], "--params is not valid JSON"),
    (["--method", "platt", "--params", "[1]"], "--params must be a JSON object"),
    (["--method", "platt", "--params", '{"bogus": 1}'], "invalid parameters for platt"),
    (["--method", "variable_tree"], "one numeric variable"),
])
def test_recalibrate_errors_exit_2_with_a_message(shared_data, tmp_path, capsys, arguments,
                                                  message) -> None:
    out = tmp_path / "out.csv"
    code = main(["recalibrate", str(shared_data / "default_nb.csv"), "--out", str(out),
                 *arguments])
    assert code == 2 and not out.exists()
    assert message in capsys.readouterr().err


def test_apply_errors_exit_2_naming_the_problem(shared_data, tmp_path, capsys) -> None:
    model_path = tmp_path / "m.json"
    assert main(["recalibrate", str(shared_data / "digits_svm.csv"), "--method", "temperature",
                 "--out", str(tmp_path / "o.csv"), "--model-out", str(model_path)]) == 0
    lacking = pd.read_csv(shared_data / "digits_svm.csv").drop(columns=["proba_4"])
    lacking.to_csv(tmp_path / "lacking.csv", index=False)
    assert main(["apply", str(model_path), str(tmp_path / "lacking.csv"), "--out",
                 str(tmp_path / "x.csv")]) == 2
    assert "'proba_4'" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["apply", str(tmp_path / "bad.json"), str(tmp_path / "lacking.csv"), "--out",
                 str(tmp_path / "x.csv")]) == 2
    assert "not a JSON model document" in capsys.readouterr().err
    (tmp_path / "pickle.json").write_text(json.dumps({"format": "pickle"}))
    assert main(["apply", str(tmp_path / "pickle.json"), str(tmp_path / "lacking.csv"),
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "not a calibdash recalibrator document" in capsys.readouterr().err
