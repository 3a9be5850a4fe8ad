"""How the summaries group rows: the score summary's sorted cuts and two-run merges, the
limit on distinct scores, and the cell summary's one-key grouping, each against a
plain pandas group-by written here (the definition of the sums)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from calibcore.metrics._resampling import cell_columns
from calibcore.metrics._weighted_measures import WeightedMeasures
from calibcore.partitioned import CellSummary, ScoreSummary
from calibcore.partitioned.measures import _partition_summaries, merge_scores
from calibcore.partitioned.score_summaries import merge_within
from calibcore.partitioned.summaries import _coordinates


def _rows(seed: int, n_rows: int, n_classes: int, decimals: int | None
          ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(n_classes), size=n_rows)
    if decimals is not None:  # ties between rows
        proba = np.round(proba, decimals)
        proba[:, -1] = np.clip(1.0 - proba[:, :-1].sum(axis=1), 0.0, 1.0)
        proba /= proba.sum(axis=1, keepdims=True)
    return rng.integers(0, n_classes, size=n_rows), proba


def _scores_by_hand(labels: np.ndarray, proba: np.ndarray, view: str) -> pd.DataFrame:
    """Rows, residual sum and positives at each distinct score, by pandas.groupby."""
    if view == "positive":
        scores, outcomes = proba[:, 1], (labels == 1).astype(float)
    else:
        top = proba.argmax(axis=1)
        scores, outcomes = proba[np.arange(labels.size), top], (labels == top).astype(float)
    frame = pd.DataFrame({"rows": 1.0, "residual": scores - outcomes, "positives": outcomes},
                         index=scores)
    return frame.groupby(level=0, sort=True).sum()


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 300),
       decimals=st.sampled_from([None, 1, 2]), view=st.sampled_from(["positive", "top_label"]),
       cut=st.floats(0.0, 1.0))
@example(seed=1, n_rows=1, decimals=None, view="positive", cut=1.0)  # an empty second part
@example(seed=1, n_rows=5, decimals=1, view="top_label", cut=0.0)  # an empty first part
def test_score_summaries_and_merges_equal_a_group_by(seed: int, n_rows: int,
                                                     decimals: int | None, view: str,
                                                     cut: float) -> None:
    labels, proba = _rows(seed, n_rows, 2, decimals)
    expected = _scores_by_hand(labels, proba, view)
    whole = ScoreSummary.of(labels, proba, view=view).sums
    pd.testing.assert_frame_equal(whole, expected, check_exact=False, rtol=1e-12)
    split = int(cut * n_rows)
    first = ScoreSummary.of(labels[:split], proba[:split], view=view) if split else \
        ScoreSummary.empty(view)
    second = ScoreSummary.of(labels[split:], proba[split:], view=view) if split < n_rows \
        else ScoreSummary.empty(view)
    merged = first.merge(second)
    assert merged.n_rows == n_rows
    pd.testing.assert_frame_equal(merged.sums, expected, check_exact=False, rtol=1e-12)
    # rows and positives are counts: exact
    assert np.array_equal(merged.sums["rows"], expected["rows"])
    assert np.array_equal(merged.sums["positives"], expected["positives"])


def test_a_merge_past_the_limit_is_none_and_at_the_limit_is_kept() -> None:
    labels = np.array([0, 1, 1, 0, 1, 0])
    proba = np.array([0.1, 0.2, 0.3, 0.3, 0.4, 0.5])
    first = ScoreSummary.of(labels[:3], proba[:3], view="positive")  # 0.1 0.2 0.3
    second = ScoreSummary.of(labels[3:], proba[3:], view="positive")  # 0.3 0.4 0.5
    # 5 distinct scores in 6 rows of sums
    assert merge_within(first, second, 4) is None
    kept = merge_within(first, second, 5)
    assert kept is not None
    assert kept.sums.index.tolist() == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert kept.sums.loc[0.3].tolist() == pytest.approx([2.0, (0.3 - 1) + 0.3, 1.0])
    assert merge_scores(first, None) is None
    with pytest.raises(Exception, match="cannot merge"):
        merge_within(first, ScoreSummary.of(labels, proba, view="top_label"), None)


@pytest.mark.parametrize(("n_classes", "decimals"), [(2, None), (2, 2), (3, 1), (4, None)])
def test_cells_equal_a_group_by_on_the_coordinates(n_classes: int, decimals: int | None
                                                   ) -> None:
    labels, proba = _rows(7, 2_000, n_classes, decimals)
    columns, _ = cell_columns(labels, proba, 15)
    quantities = WeightedMeasures.of_rows(labels, proba, "top_label", 15,
                                          "equal_width").quantities()
    frame = pd.DataFrame({"rows": np.ones(labels.size), **quantities})
    frame.index = pd.MultiIndex.from_arrays(columns, names=_coordinates(n_classes))
    expected = frame.groupby(level=list(frame.index.names), sort=True).sum()
    cells = CellSummary.of(labels, proba, n_bins=15).sums
    assert cells.index.equals(expected.index)
    assert list(cells.columns) == list(expected.columns)
    np.testing.assert_allclose(cells.to_numpy(), expected.to_numpy(), rtol=1e-12, atol=1e-12)


def test_one_task_gives_each_summary_of_a_partition() -> None:
    labels, proba = _rows(3, 500, 2, 2)
    part = pd.DataFrame({"y": labels.astype(str), "p": proba[:, 1]})
    binned, cells, positive, top = _partition_summaries(part, "y", ["p"], ["0", "1"], 10,
                                                        ("positive", "top_label"))
    assert binned.n_rows == cells.n_rows == positive.n_rows == top.n_rows == 500
    pd.testing.assert_frame_equal(positive.sums, _scores_by_hand(labels, proba, "positive"),
                                  check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(top.sums, _scores_by_hand(labels, proba, "top_label"),
                                  check_exact=False, rtol=1e-12)
    empty = _partition_summaries(part.iloc[:0], "y", ["p"], ["0", "1"], 10, ("positive",))
    assert [summary.n_rows for summary in empty] == [0, 0, 0]
