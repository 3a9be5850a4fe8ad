"""Where the variable curves are estimated: never strictly inside a wide gap of V.

A gap (a, b) between consecutive values of V is wide when b - a > 2 min(r-(a), r+(b)),
r-(a) the distance from a down to its floor(n * span)-th nearest row at or below a (r+ up
from b likewise; ties: half-way to the next value beyond, unlimited when there is none).
The references below are brute force: the gaps and the reaches are recomputed row by row,
not with the sorted searches of the product.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.partitioned._binned_loess import LOESS_BOUND
from calibcore.partitioned.variables import variables_of_parts
from calibcore.variable import loess_curves, rank_variables
from calibcore.variable.smoothing import N_EXACT

PLANTED = 0.15


def sentinel(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """10% of rows at the sentinel 999, the rest uniform on [0, 60]; the model is
    over-confident by 0.15 at v = 10, fading linearly to 0 at v = -10 and 30."""
    rng = np.random.default_rng(seed)
    values = np.where(rng.uniform(size=n_rows) < 0.1, 999.0, rng.uniform(0, 60, n_rows))
    confidence = rng.uniform(0.6, 0.95, n_rows)
    over = PLANTED * np.clip(1.0 - np.abs(values - 10.0) / 20.0, 0.0, None)
    y_true = (rng.uniform(size=n_rows) < confidence - over).astype(int)
    return values, y_true, confidence


def brute_reach(values: np.ndarray, edge: float, span: float, side: int) -> float:
    """How far the floor(n * span) rows nearest to ``edge`` on its side (side -1: at or
    below, +1: at or above) reach, by sorting the distances."""
    q = min(values.size, int(np.floor(values.size * span)))
    own = values[side * (values - edge) >= 0]
    reach = float(np.sort(np.abs(own - edge))[min(q, own.size) - 1])
    if reach > 0:
        return reach
    beyond = values[side * (values - edge) > 0]
    return float(np.min(np.abs(beyond - edge))) / 2.0 if beyond.size else np.inf


def brute_wide_gaps(values: np.ndarray, span: float) -> list[tuple[float, float]]:
    distinct = np.unique(values)
    gaps = []
    for a, b in itertools.pairwise(distinct):
        reach = min(brute_reach(values, a, span, -1), brute_reach(values, b, span, +1))
        if b - a > 2.0 * reach:
            gaps.append((float(a), float(b)))
    return gaps


def in_support(values: np.ndarray, v_star: float) -> bool:
    return bool(0.0 <= v_star <= 60.0 or v_star == 999.0)


@pytest.mark.parametrize("span", [0.8, 0.3, 1.0])
def test_the_sentinel_gap_holds_no_v_star_in_memory_or_on_dask(span) -> None:
    """2,000 rows (the binned Dask path) and 800 (gathered, smoothed exactly): v* and
    VCE(v*) lie where rows are, near the planted 0.15 at v = 10, the same on both paths,
    at any span (a window of span 1 holds every row, yet the gap stays out). Before the
    rule v* was at 71 to 977, inside the gap, with VCE(v*) 0.17 to 0.76."""
    for n_rows in (2_000, 800):
        values, y_true, confidence = sentinel(n_rows, seed=7)
        memory = loess_curves(values, y_true, confidence, span=span)
        frame = pd.DataFrame({"y": y_true, "p": confidence, "v": values})
        parts = [frame.iloc[i::5] for i in range(5)]
        dask = variables_of_parts(parts, "y", ["p"], ["0", "1"], ["v"], span=span,
                                  max_categories=0)["v"]
        assert in_support(values, memory.v_star), (n_rows, memory.v_star)
        assert 0.0 <= memory.v_star <= 25.0
        assert PLANTED - 0.05 <= memory.vce_max <= PLANTED + 0.05
        assert dask.v_star == memory.v_star
        assert dask.vce_max == pytest.approx(memory.vce_max, abs=LOESS_BOUND)
        expected_gap = [float(np.max(values[values < 999.0])), 999.0]
        np.testing.assert_array_equal(memory.gaps, [expected_gap])
        np.testing.assert_array_equal(dask.curves.gaps, [expected_gap])
        inside = (memory.x > expected_gap[0]) & (memory.x < expected_gap[1])
        assert inside.sum() > 400  # most of the 5th-95th percentile range is the gap
        for curves in (memory, dask.curves):
            assert np.isnan(curves.error[inside]).all()
            assert np.isnan(curves.predicted_error_high[inside]).all()
            assert not np.isnan(curves.error[~inside]).any()


def test_the_ranking_searches_the_same_points() -> None:
    """rank_variables (above N_EXACT rows it fits the gap alone) and the partitioned
    ranking give the curves' VCE(v*) and v*, not a point of the gap."""
    values, y_true, confidence = sentinel(5_000, seed=3)
    assert values.size > N_EXACT
    curves = loess_curves(values, y_true, confidence, span=0.8)
    ranking = rank_variables(pd.DataFrame({"v": values}), y_true, confidence,
                             n_permutations=0).iloc[0]
    assert ranking["v_star"] == curves.v_star
    assert ranking["vce_max"] == pytest.approx(curves.vce_max, abs=1e-12)
    frame = pd.DataFrame({"y": y_true, "p": confidence, "v": values})
    table = variables_of_parts([frame.iloc[:2_000], frame.iloc[2_000:]], "y", ["p"],
                               ["0", "1"], ["v"], max_categories=0).ranking()
    assert table.loc[0, "v_star"] == curves.v_star
    assert in_support(values, curves.v_star)


def test_the_gaps_match_a_brute_force_search() -> None:
    """Clusters with holes of several widths: the reported gaps are exactly the wide
    ones found row by row (those holding evaluation points, over the whole range)."""
    rng = np.random.default_rng(11)
    values = np.concatenate([rng.uniform(0, 10, 300), rng.uniform(12, 20, 300),
                             rng.uniform(45, 50, 100), rng.uniform(200, 201, 40)])
    y_true = rng.integers(0, 2, values.size)
    confidence = rng.uniform(0.5, 1.0, values.size)
    for span in (0.8, 0.2, 0.05):
        curves = loess_curves(values, y_true, confidence, span=span, curve_range="all",
                              n_points=2_000)
        expected = [gap for gap in brute_wide_gaps(values, span)
                    if ((curves.x > gap[0]) & (curves.x < gap[1])).any()]
        np.testing.assert_array_equal(curves.gaps.reshape(-1, 2),
                                      np.array(expected).reshape(-1, 2), err_msg=str(span))
        assert len(expected) >= 1  # the hole before 200 is wide at every span


def test_an_integer_variable_keeps_every_point() -> None:
    """Hours 0..23, thousands of rows each, a small span: a window at an integer holds only
    its ties (h = 1/2), yet the unit steps are bridged (2 h = 1 is not wider), so the curve
    is not broken between the integers."""
    rng = np.random.default_rng(2)
    hours = rng.integers(0, 24, 50_000).astype(float)
    y_true = rng.integers(0, 2, hours.size)
    confidence = rng.uniform(0.5, 1.0, hours.size)
    curves = loess_curves(hours, y_true, confidence, span=0.02, curve_range="all")
    assert curves.gaps.shape == (0, 2)
    assert not np.isnan(curves.error).any()
    # a decimal grid: its steps differ by rounding, which must not open gaps either
    tenths = np.round(rng.integers(0, 30, 20_000) * 0.1, 1)
    curves = loess_curves(tenths, rng.integers(0, 2, tenths.size),
                          rng.uniform(0.5, 1.0, tenths.size), span=0.02, curve_range="all")
    assert curves.gaps.shape == (0, 2)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_clusters=st.integers(1, 4),
    span=st.sampled_from([0.8, 0.5, 0.2, 0.1]),
    curve_range=st.sampled_from(["5-95", "all"]),
)
def test_v_star_lies_within_a_window_of_a_row(seed, n_clusters, span, curve_range) -> None:
    """Clusters of rows at random places and of random widths and sizes: v* is never
    strictly inside a wide gap (brute force), so it lies on a row or within the reach of
    the nearer edge of the gap around it."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(40, 200, n_clusters)  # floor(n * span) >= 4
    centres = rng.uniform(0, 1_000, n_clusters)
    widths = rng.uniform(0.1, 50, n_clusters)
    values = np.concatenate([rng.uniform(c, c + w, s)
                             for c, w, s in zip(centres, widths, sizes, strict=True)])
    y_true = rng.integers(0, 2, values.size)
    confidence = rng.uniform(0.5, 1.0, values.size)
    curves = loess_curves(values, y_true, confidence, span=span, n_points=300,
                          curve_range=curve_range)
    if np.isnan(curves.v_star):
        return
    v_star = curves.v_star
    for a, b in brute_wide_gaps(values, span):
        assert not a < v_star < b, (a, v_star, b)
    a, b = np.max(values[values <= v_star]), np.min(values[values >= v_star])
    if a < b:  # between two rows: within the reach of the nearer one, on its side
        nearer = a if v_star - a <= b - v_star else b
        side = -1 if nearer == a else +1
        assert abs(v_star - nearer) <= brute_reach(values, nearer, span, side) * (1 + 1e-9)
