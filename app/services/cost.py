"""What a long job will cost, said before it starts (rows x setting -> rough seconds).

Each service that starts long jobs estimates its own work from what it knows (distinct
neighbourhoods and their rows for HH, forest rows for support, reducer rows for UMAP)
times seconds per unit measured on a 2-core machine; the pages show the estimate next
to the run button and, over :data:`WARN_SECONDS`, a warning with a cheaper setting.
The constants are rough (the machine and its load vary): the estimate is an order of
magnitude, and the job's own time-left estimate takes over once it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Estimates above this many seconds get a warning with a cheaper setting.
WARN_SECONDS = 60.0


@dataclass(frozen=True)
class CostEstimate:
    """Rough seconds a job will take, what the estimate rests on, and a cheaper setting.

    Attributes
    ----------
    seconds : float
    basis : str
        The work counted, in words ("850 local forests on 1.3M neighbourhood rows").
    cheaper : str or None
        A setting that costs less, in words, with its own estimate when known.
    """

    seconds: float
    basis: str
    cheaper: str | None = None

    @property
    def long(self) -> bool:
        return self.seconds > WARN_SECONDS

    def words(self) -> str:
        """"about 40 s (850 local forests ...)" for the page."""
        return f"Estimated time: {duration(self.seconds)} ({self.basis})."

    def as_dict(self) -> dict[str, object]:
        return {"seconds": round(self.seconds, 1), "basis": self.basis,
                "cheaper": self.cheaper, "long": self.long}


def duration(seconds: float) -> str:
    """Rough seconds in words: "under 10 s", "about 40 s", "about 7 min", "about 2 h"."""
    if seconds < 10:
        return "under 10 s"
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 90 * 60:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"
