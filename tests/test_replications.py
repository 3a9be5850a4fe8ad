"""The two-stage coverage checks (tests.replications) keep the one-stage checks' error rates."""

from __future__ import annotations

import pytest

from tests.replications import coverage, pass_probability


@pytest.mark.parametrize(("n", "looser"), [(200, 0.005), (120, 0.01)])
def test_stopping_early_keeps_the_checks_level_and_power(n: int, looser: float) -> None:
    # as often passed when right (true coverage 95%), hardly more often when wrong (85%)
    right = pass_probability(n, 0.90, 0.95), pass_probability(n, 0.90, 0.95, early=None)
    wrong = pass_probability(n, 0.90, 0.85), pass_probability(n, 0.90, 0.85, early=None)
    assert right[0] >= right[1] > 0.99
    assert wrong[1] <= wrong[0] <= wrong[1] + looser
    # exact binomial sums, against a count by hand at n = 4 (first half 2, early 0.94: 2 of 2)
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
