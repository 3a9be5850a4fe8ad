"""Exact measures of a partitioned table on a Dask cluster: a LocalCluster of
two worker processes, tables of 1, 3 and 17 partitions, the same measures as in memory."""

from __future__ import annotations

from collections.abc import Iterator
from functools import reduce

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.distributed import Client, LocalCluster

import calibcore.partitioned.measures as partitioned
from calibcore import metrics
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import equal_mass_edges, global_measures, smooth_reliability
from calibcore.partitioned import CELL_ERROR_BOUND, FROM_CELLS
from calibcore.partitioned.measures import (
    merge_cells,
    partition_cells,
    partitioned_equal_mass,
    partitioned_measures,
    partitioned_summary,
)
from tests.calibcore.partitioned.test_summaries import in_memory


@pytest.fixture(scope="module")
def client(dask_cluster: LocalCluster) -> Iterator[Client]:
    with Client(dask_cluster) as connected:  # the default client of this module's tests
        yield connected


def table(n_rows: int, classes: list[str], seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(len(classes), 0.8), size=n_rows)
    labels = np.array([rng.choice(len(classes), p=row) for row in proba**1.3 / (
        proba**1.3).sum(axis=1, keepdims=True)])
    frame = pd.DataFrame(proba, columns=[f"p_{c}" for c in classes])
    frame.insert(0, "y", np.array(classes, dtype=object)[labels])
    return frame


@pytest.mark.slow
@pytest.mark.parametrize("n_partitions", [1, 3, 17])
def test_partitioned_intervals_equal_the_in_memory_bootstrap(client, n_partitions) -> None:
    """Above 20,000 rows the in-memory bootstrap resamples cells; the merged cells of the
    partitions are the same cells, drawn with the same seed: the same intervals."""
    classes = ["no", "yes"]
    frame = table(30_000, classes, seed=7)
    columns = [f"p_{c}" for c in classes]
    result = partitioned_measures(dd.from_pandas(frame, npartitions=n_partitions), "y",
                                  columns, classes, n_bootstrap=100, random_state=3)
    keys = [estimate.key for estimate in result.measures]
    exact = ["accuracy", "nll", "brier", "binary_brier", "ece", "mce", "classwise_ece",
             "binned_ece_plus_width"]
    assert set(keys) == {*exact, *FROM_CELLS}
    labels = pd.Index(classes).get_indexer(frame["y"])
    expected = global_measures(labels, frame[columns].to_numpy(), measures=keys,
                               n_bootstrap=100, random_state=3, interval="hybrid")
    assert result.resampling == expected.resampling
    assert result.resampling.startswith("resampled through")
    for key in keys:
        # intCE, kCE and smooth ECE too: exact from the rows at each distinct confidence
        for part in ("plug_in", "value", "low", "high"):
            assert getattr(result[key], part) == pytest.approx(
                getattr(expected[key], part), rel=1e-9, abs=1e-12), (key, part)
        assert result[key].low <= result[key].value <= result[key].high
        assert result[key].note == ""


@pytest.mark.slow
@pytest.mark.parametrize("n_partitions", [1, 3, 17])
def test_smooth_diagram_of_the_merged_cells_is_within_its_bound(client, n_partitions) -> None:
    """The smooth reliability curve and its smooth ECE from the merged cells stay within
    CELL_ERROR_BOUND of smooth_reliability on all rows, with the same bandwidth and the
    same density; the band holds the curve wherever there are rows."""
    import dask

    classes = ["no", "yes"]
    frame = table(30_000, classes, seed=11)
    columns = [f"p_{c}" for c in classes]
    parts = dd.from_pandas(frame, npartitions=n_partitions).to_delayed()
    cells = [dask.delayed(partition_cells)(part, "y", columns, classes, 15) for part in parts]
    (merged,) = dask.compute(dask.delayed(lambda items: reduce(merge_cells, items))(cells))
    got = merged.smooth_diagram(n_bootstrap=100)
    labels = pd.Index(classes).get_indexer(frame["y"])
    (expected,) = smooth_reliability(labels, frame[columns].to_numpy(), n_bootstrap=0)
    assert got.label == expected.label and got.n == 30_000
    assert got.bandwidth == expected.bandwidth
    assert np.abs(got.curve - expected.curve).max() < CELL_ERROR_BOUND
    assert np.abs(got.density - expected.density).max() < 10 * CELL_ERROR_BOUND
    assert abs(got.smooth_ece - expected.smooth_ece) < CELL_ERROR_BOUND
    shown = got.density > 1e-3
    assert np.all(got.curve_low[shown] <= got.curve[shown])
    assert np.all(got.curve[shown] <= got.curve_high[shown])
    assert np.all(got.curve_high - got.curve_low >= 0) and (got.curve_high - got.curve_low)[
        shown].max() > 0.01


@pytest.mark.slow
@pytest.mark.parametrize("n_partitions", [1, 3, 17])
@pytest.mark.parametrize("classes", [["no", "yes"], ["a", "b", "c"]])
def test_equal_mass_measures_equal_the_in_memory_ones(client, n_partitions, classes) -> None:
    """Quantile edges found exactly in two passes, then bin sums: ECE, MCE and classwise
    ECE with equal-mass bins as calibcore.metrics gives them on all rows (scores
    rounded to two decimals, so many ties sit on the edges)."""
    frame = table(6_000, classes, seed=5)
    columns = [f"p_{c}" for c in classes]
    frame[columns] = frame[columns].round(2)
    frame[columns] = frame[columns].div(frame[columns].sum(axis=1), axis=0)
    got = partitioned_equal_mass(dd.from_pandas(frame, npartitions=n_partitions), "y",
                                 columns, classes, n_bins=10)
    labels, proba = pd.Index(classes).get_indexer(frame["y"]), frame[columns].to_numpy()
    expected = {
        "ece": metrics.expected_calibration_error(labels, proba, n_bins=10,
                                                  binning="equal_mass"),
        "mce": metrics.maximum_calibration_error(labels, proba, n_bins=10,
                                                 binning="equal_mass"),
        "classwise_ece": metrics.classwise_expected_calibration_error(
            labels, proba, n_bins=10, binning="equal_mass")}
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert got["n_rows"] == 6_000 and len(got["edges"]) == 1 + len(classes)
    assert got["edges"][0] == equal_mass_edges(proba.max(axis=1), 10).tolist()


@pytest.mark.slow
def test_rows_with_distinct_probabilities_are_resampled_as_their_cells(client) -> None:
    """Three classes, every row a cell of its own: the cells are the rows, resampled."""
    frame = table(2_000, ["a", "b", "c"], seed=1)
    result = partitioned_measures(dd.from_pandas(frame, npartitions=3), "y",
                                  ["p_a", "p_b", "p_c"], ["a", "b", "c"])
    assert result.resampling.startswith("resampled through 2,000 cells")
    assert all(m.low <= m.value <= m.high for m in result.measures)
    assert result["ece"].plug_in == pytest.approx(in_memory(
        pd.Index(["a", "b", "c"]).get_indexer(frame["y"]),
        frame[["p_a", "p_b", "p_c"]].to_numpy(), 15)["ece"], rel=1e-9)


def test_too_many_cells_give_values_without_intervals(monkeypatch) -> None:
    """Above MAX_CELLS a partition gives up its cells (memory stays bounded), merges keep
    that, and the measures come without intervals, saying why."""
    monkeypatch.setattr(partitioned, "MAX_CELLS", 100)
    frame = table(600, ["a", "b", "c"], seed=2)
    columns, classes = ["p_a", "p_b", "p_c"], ["a", "b", "c"]
    small = partitioned.partition_cells(frame.iloc[:50], "y", columns, classes, 15)
    assert small is not None
    assert partitioned.partition_cells(frame, "y", columns, classes, 15) is None
    assert partitioned.merge_cells(small, None) is None
    assert partitioned.merge_cells(small, partitioned.partition_cells(
        frame.iloc[50:120], "y", columns, classes, 15)) is None  # 120 cells together
    summary = partitioned.summarize_partition(frame, "y", columns, classes, 15)
    result = partitioned.measures_with_intervals(summary, None)
    assert result.resampling.startswith("no interval: the rows fall into more than 100 cells")
    assert all(m.low is None and m.note == result.resampling for m in result.measures)


@pytest.mark.parametrize("n_partitions", [1, 3, 17])
@pytest.mark.parametrize("classes", [["no", "yes"], ["a", "b", "c"]])
def test_partitioned_measures_equal_the_in_memory_ones(client, n_partitions, classes) -> None:
    frame = table(5_000, classes, seed=len(classes))
    columns = [f"p_{c}" for c in classes]
    partitioned = dd.from_pandas(frame, npartitions=n_partitions)
    assert partitioned.npartitions == n_partitions
    summary = partitioned_summary(partitioned, "y", columns, classes, n_bins=15)
    labels = pd.Index(classes).get_indexer(frame["y"])
    expected = in_memory(labels, frame[columns].to_numpy(), 15)
    got = summary.measures()
    assert summary.n_rows == len(frame)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_one_probability_column_and_classes_named_as_uploads_name_them(client) -> None:
    rng = np.random.default_rng(3)
    positive = rng.uniform(size=3_000)
    frame = pd.DataFrame({"delayed": (rng.uniform(size=3_000) < positive**1.2).astype(int),
                          "p_delayed": positive})
    summary = partitioned_summary(dd.from_pandas(frame, npartitions=5), "delayed",
                                  ["p_delayed"])
    expected = in_memory(frame["delayed"].to_numpy(), np.column_stack([1 - positive, positive]),
                         15)
    for key, value in expected.items():
        assert summary.measures()[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_labels_that_are_not_classes_and_missing_columns_are_refused(client) -> None:
    frame = dd.from_pandas(table(200, ["no", "yes"], seed=1), npartitions=3)
    with pytest.raises(CalibrationInputError, match="not classes"):
        partitioned_summary(frame, "y", ["p_no", "p_yes"], ["no", "maybe"])
    with pytest.raises(CalibrationInputError, match="no column named 'p_maybe'"):
        partitioned_summary(frame, "y", ["p_no", "p_maybe"])


def test_without_distinct_confidences_the_bin_free_measures_come_from_cells_in_bound() -> None:
    """Above MAX_CELLS distinct confidences the scores give up; intCE, kCE and smooth ECE
    then come from the cells, within CELL_ERROR_BOUND and saying so."""
    from calibcore.partitioned import BinnedSummary, CellSummary, ScoreSummary

    frame = table(30_000, ["no", "yes"], seed=9)
    labels = pd.Index(["no", "yes"]).get_indexer(frame["y"])
    proba = frame[["p_no", "p_yes"]].to_numpy()
    summary, cells = BinnedSummary.of(labels, proba), CellSummary.of(labels, proba)
    exact = partitioned.measures_with_intervals(summary, cells, ScoreSummary.of(labels, proba),
                                                n_bootstrap=20)
    approximate = partitioned.measures_with_intervals(summary, cells, None, n_bootstrap=20)
    for key in FROM_CELLS:
        assert approximate[key].plug_in == pytest.approx(exact[key].plug_in,
                                                         abs=CELL_ERROR_BOUND)
        assert "resampling cells" in approximate[key].note and exact[key].note == ""
