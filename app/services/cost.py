"""What a long job will cost, said before it starts (work counted x fitted seconds).

Each service that starts a job counts its work from what it knows before starting
(forest rows for calibration support, distinct neighbourhoods for HH, rows and
variables for the ranking, ...) as a few named terms; :class:`CostModel` turns the
terms into seconds with coefficients fitted on measured runs
(``benchmarks/fit_costs.py`` times every job kind over a few sizes and writes
:mod:`app.services.cost_table`). A model whose measured runs stray more than a factor of
two from its fit says a range ("20 s - 1 min") instead of a point. The pages show the
estimate next to the run button and, over :data:`WARN_SECONDS`, a warning with a
cheaper setting; every job carries its estimate in its snapshot, and the job's own
time-left estimate takes over once it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.services.cost_table import COST_MODELS

#: Estimates above this many seconds get a warning with a cheaper setting.
WARN_SECONDS = 60.0
#: A point estimate is promised only when the fit's measured runs lie within this factor.
POINT_FACTOR = 2.0


@dataclass(frozen=True)
class CostEstimate:
    """Seconds a job will take, what the estimate rests on, and a cheaper setting.

    Attributes
    ----------
    seconds : float
        The point estimate.
    basis : str
        The work counted, in words ("850 local forests on 1.3M neighbourhood rows").
    cheaper : str or None
        A setting that costs less, in words, with its own estimate when known.
    spread : float
        The factor (>= 1) within which the cost model's measured runs lay around it: the
        job should take between ``seconds / spread`` and ``seconds * spread``.
    terms : mapping of str to float, optional
        The work counted (:class:`CostModel`'s terms); what ``benchmarks/fit_costs.py``
        fits the model on.
    """

    seconds: float
    basis: str
    cheaper: str | None = None
    spread: float = 1.0
    terms: Mapping[str, float] | None = field(default=None, compare=False)

    @property
    def long(self) -> bool:
        return self.seconds > WARN_SECONDS

    @property
    def low(self) -> float:
        return self.seconds / max(self.spread, 1.0)

    @property
    def high(self) -> float:
        return self.seconds * max(self.spread, 1.0)

    def text(self) -> str:
        """The estimate in words: a point ("about 40 s") or, when the model is not
        trusted within a factor of two, a range ("20 s - 1 min")."""
        return duration(self.seconds, self.spread)

    def words(self) -> str:
        """"Estimated time: about 40 s (850 local forests ...)." for the page."""
        return f"Estimated time: {self.text()} ({self.basis})."

    def as_dict(self) -> dict[str, object]:
        return {"seconds": round(self.seconds, 1), "low": round(self.low, 1),
                "high": round(self.high, 1), "text": self.text(), "basis": self.basis,
                "cheaper": self.cheaper, "long": self.long}


@dataclass(frozen=True)
class CostModel:
    """Seconds of one job kind as a non-negative combination of counted work terms.

    Attributes
    ----------
    coefficients : mapping of str to float
        Seconds per unit of each term ("fixed" is the term 1).
    spread : float
        The largest factor between a measured run and the fit
        (max over runs of max(measured / fitted, fitted / measured)).
    """

    coefficients: Mapping[str, float]
    spread: float = 1.0

    def seconds(self, terms: Mapping[str, float]) -> float:
        """Fitted seconds of the counted ``terms`` (terms the model does not know add 0;
        "fixed" is always counted once)."""
        total = self.coefficients.get("fixed", 0.0)
        for name, amount in terms.items():
            if name != "fixed":
                total += self.coefficients.get(name, 0.0) * float(amount)
        return float(total)

    def estimate(self, terms: Mapping[str, float], basis: str,
                 cheaper: str | None = None) -> CostEstimate:
        return CostEstimate(self.seconds(terms), basis, cheaper, self.spread, dict(terms))


def cost_model(kind: str) -> CostModel:
    """The fitted model of a job kind (:data:`app.services.cost_table.COST_MODELS`)."""
    coefficients, spread = COST_MODELS[kind]
    return CostModel(coefficients, spread)


def cost_models() -> dict[str, CostModel]:
    """Every fitted model, by job kind."""
    return {kind: cost_model(kind) for kind in COST_MODELS}


def _short(seconds: float) -> str:
    if seconds < 1:
        return "1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def duration(seconds: float, spread: float = 1.0) -> str:
    """Seconds in words: "under a second", "about 4 s", "about 7 min", "about 2 h"; with a
    ``spread`` over :data:`POINT_FACTOR`, the range "20 s - 1 min" instead."""
    if spread > POINT_FACTOR:
        low, high = _short(seconds / spread), _short(seconds * spread)
        if seconds * spread < 1:
            return "under a second"
        return f"{low} - {high}" if low != high else f"about {low}"
    if seconds < 1:
        return "under a second"
    return f"about {_short(seconds)}"
