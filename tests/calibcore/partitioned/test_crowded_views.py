"""Views known to hold too many distinct scores: their score summaries are not built, and
the summaries are those the merges would have reached."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import calibcore.partitioned.measures as partitioned
from calibcore.exceptions import CalibrationInputError


def binary(n_rows: int, seed: int, decimals: int) -> pd.DataFrame:
    """One P(positive) column rounded to ``decimals``: at most 10**decimals + 1 distinct
    positive scores, and about half as many top-label ones (max(p, 1 - p))."""
    rng = np.random.default_rng(seed)
    positive = np.round(rng.uniform(size=n_rows), decimals)
    return pd.DataFrame({"y": (rng.uniform(size=n_rows) < positive).astype(int),
                         "p": positive})


def _same(first: pd.DataFrame, second: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(first, second, check_exact=True)


def test_a_view_over_the_limit_is_crowded_and_the_summaries_are_unchanged(monkeypatch) -> None:
    frame = binary(4_000, seed=4, decimals=3)
    # counted by hand: more positive scores than the limit, fewer top-label ones
    n_positive = np.unique(frame["p"]).size
    n_top = np.unique(np.maximum(frame["p"], 1 - frame["p"])).size
    limit = 700
    assert n_top <= limit < n_positive
    monkeypatch.setattr(partitioned, "MAX_CELLS", limit)
    table = dd.from_pandas(frame, npartitions=8)
    classes, crowded = partitioned.classes_and_crowded_views(table, "y", ["p"])
    assert classes == ["0", "1"] and crowded == ["positive"]
    views = ("positive", "top_label")
    skipped = partitioned.partitioned_summaries(table, "y", ["p"], classes, views=views,
                                                crowded=crowded)
    built = partitioned.partitioned_summaries(table, "y", ["p"], classes, views=views)
    assert skipped[2]["positive"] is None and built[2]["positive"] is None  # merges agree
    assert skipped[0].classwise.tolist() == built[0].classwise.tolist()
    assert skipped[1] is None and built[1] is None  # cells over the same limit
    _same(skipped[2]["top_label"].sums, built[2]["top_label"].sums)


def test_only_what_the_first_partitions_prove_is_crowded(monkeypatch) -> None:
    """Few distinct scores in the partitions read, many in the rest: not known to be
    crowded, so the score summaries are built and the merges drop them."""
    few, many = binary(2_000, seed=5, decimals=1), binary(2_000, seed=6, decimals=4)
    frame = pd.concat([few, many], ignore_index=True)
    monkeypatch.setattr(partitioned, "MAX_CELLS", 500)
    monkeypatch.setattr(partitioned, "CROWDED_PARTS", 2)
    monkeypatch.setattr(partitioned, "CROWDED_BATCH", 1)
    table = dd.from_pandas(frame, npartitions=4)  # the first two hold the 11 values
    assert np.unique(frame["p"].iloc[:2_000]).size <= 11
    _, crowded = partitioned.classes_and_crowded_views(table, "y", ["p"])
    assert crowded == []
    _, _, scores = partitioned.partitioned_summaries(table, "y", ["p"], ["0", "1"],
                                                     views=("positive",))
    assert scores["positive"] is None


def test_invalid_probabilities_are_left_to_the_summaries(monkeypatch) -> None:
    frame = binary(600, seed=7, decimals=3)
    frame.loc[5, "p"] = 1.5
    monkeypatch.setattr(partitioned, "MAX_CELLS", 10)
    table = dd.from_pandas(frame, npartitions=3)
    classes, crowded = partitioned.classes_and_crowded_views(table, "y", ["p"])
    assert classes == ["0", "1"] and crowded == []
    with pytest.raises(CalibrationInputError):
        partitioned.partitioned_summaries(table, "y", ["p"], classes)
