"""Local or global calibration: advice that says what it rests on.

Hidden heterogeneity only predicts whether a local (feature-based) recalibrator could
help (the rule of thumb of Wagstaff & Dietterich 2023,
:func:`calibcore.heterogeneity.recommend_calibration`).
Once recalibrators have been fitted on a dataset, their held-out NLL is evidence of
what did help, and the advice rests on it instead: the best method on held-out NLL,
with the HH rule of thumb kept beside it (and said to disagree when it does).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from calibcore.recalibration import REGISTRY

#: The held-out measure the advice ranks recalibrators by (lower is better).
MEASURE = "nll"


def is_local(method: str) -> bool:
    """Whether a recalibration method is local (it reads the features: SWC, LoRe, ...)."""
    estimator = REGISTRY.get(method)
    return bool(estimator is not None and estimator.needs_features)


def _comparable(recalibrations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored recalibrations scored on the same held-out rows (the most common scheme
    and count) with a finite held-out NLL."""
    scored = [r for r in recalibrations
              if math.isfinite(float((r.get("after") or {}).get(MEASURE, math.nan)))]
    if not scored:
        return []
    rows = Counter((r.get("scheme"), r.get("n_heldout")) for r in scored).most_common(1)[0][0]
    return [r for r in scored if (r.get("scheme"), r.get("n_heldout")) == rows]


def advise(hh_advice: dict[str, Any], recalibrations: list[dict[str, Any]]) -> dict[str, Any]:
    """The HH recommendation, resting on the held-out comparison of ``recalibrations``
    (summaries of the dataset's stored recalibrations) when there is one.

    Returns ``hh_advice`` with ``basis`` (``"held_out"`` or ``"hidden_heterogeneity"``),
    ``basis_note`` (what the advice rests on, in words) and, on held-out evidence,
    ``held_out`` (method, name, NLL, local or not; best first), ``best`` (its first entry),
    ``uncalibrated_nll`` and ``hh_agrees``; ``recommend`` is then the best method's kind
    (``"local"``, ``"global"`` or ``"none"`` when no recalibrator beats the original).
    """
    compared = _comparable(recalibrations)
    if not compared:
        return {**hh_advice, "basis": "hidden_heterogeneity", "basis_note": (
            "Rests on hidden heterogeneity alone (a rule of thumb: mean HH above "
            f"{hh_advice['hh_threshold']:g} and at least {hh_advice['min_calibration_rows']:,}"
            " calibration rows favour a local method). No recalibrators have been compared "
            "on this dataset's held-out rows yet: fit SWC and a global method (e.g. beta or "
            "temperature) on the Recalibrate page to check it.")}
    ranked = sorted(({"method": r["method"], "name": r["name"], "nll": float(r["after"][MEASURE]),
                      "local": is_local(r["method"])} for r in compared),
                    key=lambda entry: entry["nll"])
    best = ranked[0]
    uncalibrated = float(compared[0]["before"][MEASURE])
    if uncalibrated <= best["nll"]:
        recommend = "none"
        headline = (f"No recalibrator fitted so far beats the original probabilities on "
                    f"held-out NLL (original {uncalibrated:.4f}; best {best['name']} "
                    f"{best['nll']:.4f}).")
    else:
        recommend = "local" if best["local"] else "global"
        headline = (f"{best['name']} has the lowest held-out NLL ({best['nll']:.4f}; "
                    f"original {uncalibrated:.4f}).")
    agrees = hh_advice["recommend"] == recommend
    note = (f"Rests on the held-out comparison of {len(ranked)} recalibrator(s) fitted on "
            f"this dataset ({compared[0].get('scheme') or 'held-out rows'}; "
            f"{int(compared[0].get('n_heldout') or 0):,} rows). {headline} These are point "
            "estimates: the Recalibrate page's comparison says whether a difference exceeds "
            "the bootstrap noise.")
    if not any(entry["local"] for entry in ranked) or all(entry["local"] for entry in ranked):
        note += (" Only " + ("local" if ranked[0]["local"] else "global") + " methods were "
                 "compared; fit the other kind too for a fair answer.")
    if not agrees:
        note += (f" Hidden heterogeneity alone would say {hh_advice['recommend']} (mean HH "
                 f"{hh_advice['mean_hh']:.3f}, threshold {hh_advice['hh_threshold']:g}); the "
                 "held-out rows say otherwise, and they are the better evidence.")
    return {**hh_advice, "recommend": recommend, "basis": "held_out", "basis_note": note,
            "held_out": ranked, "best": best, "uncalibrated_nll": uncalibrated,
            "hh_agrees": agrees}
