"""The two-stage checks (tests.replications) keep the one-stage checks' error rates."""

from __future__ import annotations

import pytest

from tests.replications import coverage, pass_probability


@pytest.mark.parametrize(("n", "at_least", "early", "right", "wrong", "looser"), [
    (200, 0.90, 0.94, 0.95, 0.85, 0.005),  # coverage of 95% intervals
    (120, 0.90, 0.94, 0.95, 0.85, 0.01),
    (200, 0.91, 0.95, 1 - 10 / 201, 0.90, 0.01),  # files a 5% test does not reject
    (100, 0.90, 0.96, 0.99, 0.85, 0.01),  # files a test of power 0.99 rejects
    (100, 0.70, 0.80, 0.90, 0.65, 0.01),  # files a test rejecting 10% does not reject
])
def test_stopping_early_keeps_the_checks_level_and_power(n: int, at_least: float, early: float,
                                                        right: float, wrong: float,
                                                        looser: float) -> None:
    # as often passed when right, hardly more often when wrong
    passes = {truth: (pass_probability(n, at_least, truth, early=early),
                      pass_probability(n, at_least, truth, early=None))
              for truth in (right, wrong)}
    assert passes[right][0] >= passes[right][1] > 0.99
    assert passes[wrong][1] <= passes[wrong][0] <= passes[wrong][1] + looser


def test_pass_probability_is_the_sum_counted_by_hand() -> None:
    # n = 4: the first half is 2 replications, early 0.94 needs 2 of 2, the check 3 of 4
    p = 0.9
    by_hand = p**2 + 2 * p * (1 - p) * p**2  # 2 of 2 at once, or 1 of 2 and then 2 of 2
    assert pass_probability(4, 0.75, p) == pytest.approx(by_hand)
    assert pass_probability(4, 0.75, p, early=None) == pytest.approx(p**4 + 4 * p**3 * (1 - p))


def test_coverage_stops_at_half_only_when_every_interval_is_clear() -> None:
    calls: list[int] = []

    def all_covered(replication: int) -> dict[str, bool]:
        calls.append(replication)
        return {"a": True, "b": replication % 20 != 0}  # b: 95% of the first 100

    assert coverage(all_covered, 200) == {"a": 1.0, "b": 0.95}
    assert calls == list(range(100))
    calls.clear()

    def one_unclear(replication: int) -> dict[str, bool]:
        calls.append(replication)
        return {"a": True, "b": replication % 10 != 0}  # b: 90%

    assert coverage(one_unclear, 200) == {"a": 1.0, "b": 0.9}
    assert calls == list(range(200))


def test_each_interval_can_have_its_own_early_bound() -> None:
    calls: list[int] = []

    def covered(replication: int) -> dict[str, bool]:
        calls.append(replication)
        return {"a": True, "b": replication % 25 != 0}  # b: 48 of the first 50, 96 of 100

    assert coverage(covered, 100, early={"a": 0.99, "b": 0.96}) == {"a": 1.0, "b": 0.96}
    assert calls == list(range(50))
    calls.clear()
    assert coverage(covered, 100, early={"a": 0.99, "b": 0.97}) == {"a": 1.0, "b": 0.96}
    assert calls == list(range(100))
