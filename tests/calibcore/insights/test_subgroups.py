"""The worst subgroups against a by-hand audit written here: every slice's
rows found with pandas, its gap and t test with scipy.stats.ttest_1samp, and
Benjamini-Hochberg written out."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calibcore.exceptions import CalibrationInputError
from calibcore.insights import worst_subgroups
from calibcore.metrics import smooth_ece


def by_hand_bh(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg: p_(i) * m / i, made monotone from the largest down."""
    m = p_values.size
    order = np.argsort(p_values)
    scaled = p_values[order] * m / np.arange(1, m + 1)
    adjusted = np.empty(m)
    running = 1.0
    for position in range(m - 1, -1, -1):
        running = min(running, scaled[position])
        adjusted[order[position]] = running
    return adjusted


def planted(n_rows: int = 4_000, seed: int = 3) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A calibrated binary model except on colour == 'red' and size > 0.6, where the truth
    is much closer to 1/2 than the model says (over-confident there)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], n_rows),
                          "size": rng.uniform(size=n_rows),
                          "weight": np.where(rng.random(n_rows) < 0.1, np.nan,
                                             rng.normal(size=n_rows))})
    positive = rng.uniform(0.05, 0.95, n_rows)
    truth = positive.copy()
    bad = (frame["colour"] == "red").to_numpy() & (frame["size"] > 0.6).to_numpy()
    truth[bad] = 0.5 + 0.2 * (truth[bad] - 0.5)
    return frame, (rng.random(n_rows) < truth).astype(int), positive


def test_every_slice_equals_a_by_hand_audit() -> None:
    frame, labels, positive = planted()
    audit = worst_subgroups(frame, labels, positive, n_bins=4, min_support=150, top=5)
    confidence = np.maximum(positive, 1 - positive)
    residual = confidence - ((positive > 0.5).astype(int) == labels)
    conditions = {"colour": [frame["colour"] == level for level in ("red", "green", "blue")],
                  "size": [], "weight": [frame["weight"].isna()]}
    for name in ("size", "weight"):
        values = frame[name].dropna()
        edges = np.unique(np.quantile(values, np.linspace(0, 1, 5)))
        for i, (low, high) in enumerate(itertools.pairwise(edges)):
            above = frame[name] >= low if i == 0 else frame[name] > low
            conditions[name].append(above & (frame[name] <= high))
    masks = [mask for group in conditions.values() for mask in group if mask.sum() >= 150]
    names = [name for name, group in conditions.items() for mask in group if mask.sum() >= 150]
    slices = [m.to_numpy() for m in masks]
    for (i, a), (j, b) in itertools.combinations(enumerate(masks), 2):
        if names[i] != names[j] and (a & b).sum() >= 150:
            slices.append((a & b).to_numpy())
    assert audit.n_tried == len(slices) and len(audit.subgroups) == len(slices)
    # two classes: each slice is tested in both views (the positive view's residual is
    # P(class 1) - 1[y = 1]), every test in one Benjamini-Hochberg family
    other = positive - labels
    expected = {}
    for rows in slices:
        tests = [stats.ttest_1samp(r[rows], 0.0).pvalue for r in (residual, other)]
        expected[int(rows.sum()), round(float(residual[rows].mean()), 12)] = (
            tests, float(other[rows].mean()))
    got = {(s.n, round(s.gap, 12)): s for s in audit.subgroups}
    assert got.keys() == expected.keys()
    keys = list(expected)
    family = by_hand_bh(np.array([expected[k][0] for k in keys]).T.ravel())
    adjusted = np.minimum(family[:len(keys)], family[len(keys):])
    for key, by_hand in zip(keys, adjusted, strict=True):
        (own, folded), other_gap = expected[key]
        assert got[key].p_value == pytest.approx(min(own, folded), rel=1e-6, abs=1e-300)
        assert got[key].p_adjusted == pytest.approx(by_hand, rel=1e-9)
        assert got[key].other_gap == pytest.approx(other_gap, abs=1e-12)
    larger = [max(abs(s.gap), abs(s.other_gap)) for s in audit.subgroups]
    assert np.all(np.diff(larger) <= 0)  # worst first, by the larger of the two gaps
    worst = audit.subgroups[0]
    assert {c.feature for c in worst.conditions} == {"colour", "size"}
    assert worst.describe().startswith("colour = red") and worst.gap > 0.1  # over-confident
    # symmetric about 1/2: the positive view's gap hides it, the top-label one shows it
    assert abs(worst.other_gap) < 0.05 and worst.significant_views == ("top_label",)
    assert worst.p_adjusted < 1e-6 and worst.gap_low <= worst.gap <= worst.gap_high
    rows = worst.mask(frame)
    assert rows.sum() == worst.n
    assert worst.smooth_ece == pytest.approx(smooth_ece(labels[rows], positive[rows]))
    assert all(s.smooth_ece is None for s in audit.subgroups[5:])


def test_a_calibrated_model_has_few_discoveries() -> None:
    """No planted error: after Benjamini-Hochberg at 5%, (almost) no slice stands out."""
    rng = np.random.default_rng(8)
    n_rows = 20_000
    frame = pd.DataFrame({f"x{i}": rng.normal(size=n_rows) for i in range(4)})
    positive = rng.uniform(0.05, 0.95, n_rows)
    labels = (rng.random(n_rows) < positive).astype(int)
    audit = worst_subgroups(frame, labels, positive, top=0)
    assert sum(s.p_adjusted < 0.05 for s in audit.subgroups) <= 1
    assert audit.min_support == 200  # 1% of the rows


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(n_rows=st.integers(300, 900), seed=st.integers(0, 2**16), support=st.integers(20, 120))
def test_intervals_hold_their_gap_and_counts_their_rows(n_rows: int, seed: int,
                                                        support: int) -> None:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.choice(["u", "v"], n_rows), "b": rng.normal(size=n_rows),
                          "c": rng.integers(0, 3, n_rows)})
    proba = rng.dirichlet(np.ones(3), n_rows)
    labels = rng.integers(0, 3, n_rows)
    audit = worst_subgroups(frame, labels, proba, kinds={"c": "categorical"},
                            min_support=support, top=3)
    for subgroup in audit.subgroups:
        assert subgroup.n >= support and subgroup.mask(frame).sum() == subgroup.n
        assert subgroup.gap_low <= subgroup.gap <= subgroup.gap_high
        assert 0 <= subgroup.p_value <= subgroup.p_adjusted <= 1
        assert subgroup.gap == pytest.approx(subgroup.mean_score - subgroup.observed_rate)


def test_bad_settings_are_refused() -> None:
    frame, labels, positive = planted(500)
    with pytest.raises(CalibrationInputError, match="min_support"):
        worst_subgroups(frame, labels, positive, min_support=-1)
    with pytest.raises(CalibrationInputError, match="least support"):
        worst_subgroups(frame, labels, positive, min_support=10_000)
    with pytest.raises(CalibrationInputError, match="no feature"):
        worst_subgroups(frame.iloc[:, :0], labels, positive)
