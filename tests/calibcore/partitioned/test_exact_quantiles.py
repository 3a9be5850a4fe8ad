"""Equal-mass edges of scores in parts: two passes over the parts give
numpy's quantile edges of all the scores, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.metrics import equal_mass_edges
from calibcore.partitioned import (
    CELLS,
    cell_counts,
    cell_values,
    merge_values,
    merged_equal_mass_edges,
    target_cells,
)


@settings(max_examples=300, deadline=None)
@given(n_rows=st.integers(1, 3_000), n_bins=st.integers(1, 40), n_cuts=st.integers(0, 12),
       shape=st.sampled_from(["uniform", "rounded", "crowded", "ends"]),
       seed=st.integers(0, 2**32 - 1))
def test_two_passes_give_the_quantile_edges_of_all_scores(
        n_rows: int, n_bins: int, n_cuts: int, shape: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n_rows)
    if shape == "rounded":  # ties everywhere
        scores = np.round(scores, 1)
    elif shape == "crowded":  # most scores inside one or two cells
        scores = 0.999 + rng.uniform(size=n_rows) * 2.0 / CELLS
    elif shape == "ends":  # exact 0s and 1s, the outermost cells
        scores = rng.choice([0.0, 1.0, 0.5], size=n_rows)
    parts = np.split(scores, np.sort(rng.integers(0, n_rows + 1, size=n_cuts)))
    counts = sum(cell_counts(part) for part in parts)
    targets = target_cells(counts, n_bins)
    values = merge_values([cell_values(part, targets) for part in parts])
    got = merged_equal_mass_edges(counts, values, n_bins)
    np.testing.assert_array_equal(got, equal_mass_edges(scores, n_bins))
    assert int(values.sum()) <= n_rows and targets.size <= 2 * (n_bins + 1)
