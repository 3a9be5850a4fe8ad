"""Row weights from the command line and from Python (calibdash.explore's roles)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from app.cli import main


@pytest.fixture
def files(shared_data, tmp_path):  # type: ignore[no-untyped-def]
    frame = pd.read_csv(shared_data / "default_nb.csv").head(1500)
    weights = np.random.default_rng(3).integers(0, 4, len(frame))
    weights[0] = 1
    frame.assign(w=weights).to_csv(tmp_path / "weighted.csv", index=False)
    frame.loc[frame.index.repeat(weights)].to_csv(tmp_path / "repeated.csv", index=False)
    return tmp_path


def test_report_weight_equals_the_repeated_rows(files, capsys) -> None:  # type: ignore[no-untyped-def]
    for name, extra in (("weighted", ["--weight", "w"]), ("repeated", [])):
        assert main(["report", str(files / f"{name}.csv"), "--n-bootstrap", "0",
                     "--out", str(files / f"{name}.json"), *extra]) == 0
    weighted, repeated = (json.loads((files / f"{n}.json").read_text())
                          for n in ("weighted", "repeated"))
    assert weighted["roles"]["weight"] == "w" and "w" not in weighted["roles"]["features"]
    assert weighted["weighted"] is True and repeated["weighted"] is False
    for key, value in repeated["metrics"]["metrics"].items():
        assert weighted["metrics"]["metrics"][key] == pytest.approx(value, abs=1e-9), key
    assert weighted["variables"]["weighted"] is True
    assert ([v["vece"] for v in weighted["variables"]["variables"]]
            == pytest.approx([v["vece"] for v in repeated["variables"]["variables"]], abs=1e-12))
    assert "Kish n_eff" in capsys.readouterr().out


def test_report_negative_rate_and_its_refusals(files, capsys) -> None:  # type: ignore[no-untyped-def]
    out = files / "rate.json"
    assert main(["report", str(files / "repeated.csv"), "--n-bootstrap", "0",
                 "--negative-rate", "0.2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    frame = pd.read_csv(files / "repeated.csv")
    weights = np.where(frame["y_true"] == 0, 5.0, 1.0)
    brier = np.average((frame["y_prob"] - frame["y_true"]) ** 2, weights=weights)
    assert report["metrics"]["metrics"]["binary_brier"] == pytest.approx(brier, rel=1e-12)
    assert report["negative_rate"] == 0.2
    assert main(["report", str(files / "repeated.csv"), "--negative-rate", "1.5"]) == 2
    assert main(["report", str(files / "weighted.csv"), "--weight", "nope"]) == 2
    assert main(["report", str(files / "weighted.csv"), "--engine", "dask",
                 "--weight", "nope"]) == 2
    assert "--weight: no column named 'nope'" in capsys.readouterr().err


def test_explore_roles_take_a_weight_column_or_weights() -> None:
    from calibcore.exceptions import CalibrationInputError
    from calibdash.explorer import _with_weights

    frame = pd.DataFrame({"y": [0, 1], "p": [0.3, 0.6]})
    weighted, column = _with_weights(frame, [2.0, 0.5])
    assert column == "sample_weight" and weighted["sample_weight"].tolist() == [2.0, 0.5]
    with pytest.raises(CalibrationInputError, match="one weight per row"):
        _with_weights(frame, [1.0])
