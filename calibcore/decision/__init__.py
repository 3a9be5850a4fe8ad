"""Decision curves: the net benefit of acting on a model's probabilities at each
threshold, against treating every row or none (Vickers & Elkin 2006).

The public names of its modules, re-exported here:

- :mod:`calibcore.decision.net_benefit`: Net benefit, decision curves with bootstrap bands,
  and the paired difference of two score vectors on the same rows.
"""

from calibcore.decision.net_benefit import (
    DEFAULT_THRESHOLDS,
    MAX_THRESHOLDS,
    DecisionCurve,
    NetBenefitDifference,
    check_thresholds,
    decision_curve,
    net_benefit,
    net_benefit_difference,
)

__all__ = [
    "DEFAULT_THRESHOLDS",
    "MAX_THRESHOLDS",
    "DecisionCurve",
    "NetBenefitDifference",
    "check_thresholds",
    "decision_curve",
    "net_benefit",
    "net_benefit_difference",
]
