"""The compiled group sums are NumPy's ``bincount`` sums of the same columns, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.partitioned._group_sums import loess_group_sums, summed, summed_where


def _bincounts(index: np.ndarray, columns: np.ndarray, size: int) -> np.ndarray:
    """The sums as NumPy gives them: one ``bincount`` per column."""
    return np.stack([np.bincount(index, weights=column, minlength=size)
                     for column in columns.T], axis=1).reshape(size, columns.shape[1])


@settings(max_examples=80)
@given(n_rows=st.integers(0, 3_000), size=st.integers(1, 40), n_columns=st.integers(1, 8),
       seed=st.integers(0, 2**32 - 1))
def test_sums_are_bincounts_of_each_column(n_rows, size, n_columns, seed) -> None:
    rng = np.random.default_rng(seed)
    index = rng.integers(0, size, size=n_rows)
    # magnitudes far apart, so that any change in the order of the additions shows
    statistics = rng.normal(size=(n_rows, n_columns)) * 10.0 ** rng.integers(
        -8, 9, size=(n_rows, n_columns))
    assert np.array_equal(summed(index, statistics, size), _bincounts(index, statistics, size))
    keep = rng.uniform(size=n_rows) < 0.6
    assert np.array_equal(summed_where(index, keep, statistics, size),
                          _bincounts(index[keep], statistics[keep], size))
    # a strided view (a column selection) reads the same values
    wide = np.column_stack([statistics, statistics])[:, ::2]
    assert np.array_equal(summed(index, wide, size), _bincounts(index, wide, size))


@settings(max_examples=60)
@given(n_rows=st.integers(0, 3_000), size=st.integers(1, 40), weighted=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_loess_group_sums_are_the_stacked_columns_summed(n_rows, size, weighted,
                                                         seed) -> None:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, size, size=n_rows)
    statistics = rng.normal(size=(n_rows, 4)) * 10.0 ** rng.integers(-6, 7, size=(n_rows, 4))
    offset = rng.normal(size=n_rows) * 1e3
    mass = rng.uniform(0.5, 3.0, size=n_rows) if weighted else statistics[:, 0]
    errors, predicted, last = statistics[:, 1], statistics[:, 2], statistics[:, 3]
    columns = np.column_stack([mass, mass * offset if weighted else offset, errors,
                               errors * offset, predicted, predicted * offset, last])
    assert np.array_equal(
        loess_group_sums(group, mass, offset, errors, predicted, last, size,
                         weighted=weighted),
        _bincounts(group, columns, size))


def test_a_group_outside_the_groups_is_refused() -> None:
    with pytest.raises(ValueError, match="outside the groups"):
        summed(np.array([0, 3]), np.ones((2, 1)), 3)
    with pytest.raises(ValueError, match="outside the groups"):
        summed(np.array([-1]), np.ones((1, 2)), 3)


def test_columns_of_another_length_are_refused() -> None:
    with pytest.raises(ValueError, match="a row for each group"):
        summed(np.array([0, 1, 2]), np.ones((2, 1)), 3)
    with pytest.raises(ValueError, match="a value for each row"):
        summed_where(np.array([0, 1]), np.array([True]), np.ones((2, 1)), 3)
    with pytest.raises(ValueError, match="a value for each group"):
        ones = np.ones(3)
        loess_group_sums(np.array([0, 1, 2]), ones, ones, ones, ones[:2], ones, 3,
                         weighted=False)
