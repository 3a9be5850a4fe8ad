"""Which recalibrated probabilities to use: advice that weighs both proper scores.

NLL and the Brier score are both proper scoring rules, but they weigh a confident
mistake very differently: NLL charges -log p for the probability p given to the outcome
that happened, without bound (27.6 nats at p = 1e-12), while Brier charges at most 2.
On a decision tree's step-shaped scores, with many predictions of exactly 0 and a few
positives among them, a handful of rows decides NLL: a map that pulls every probability
towards the middle (temperature scaling) lowers NLL while every calibration error and
Brier get worse. So the advice never rests on one score:

- a method that makes the calibration errors (ECE, smooth ECE, kCE) and Brier worse than
  the uncalibrated probabilities on the held-out rows is not advised, whatever NLL says;
  when every fitted method is, the advice says so and names methods likely to help;
- among the others, the front-runner is the method best on both NLL and Brier, or, when
  the two disagree, the one better on more of the calibration errors; it is advised when
  its paired 95% interval against the uncalibrated probabilities lies below 0 for NLL or
  Brier and above 0 for neither; then the simplest method that the data cannot tell
  apart from it on either score is advised;
- whenever NLL and Brier favour different probabilities, the advice says so and why.

The intervals are paired bootstrap intervals of the per-row differences (the same
resampled rows for both methods), much tighter than two separate intervals. With row
weights the scores are weighted means and the resampled rows carry their weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from calibcore.metrics import NLL_CLIP, subsample_plan
from calibcore.recalibration import REGISTRY

CONFIDENCE_LEVEL = 0.95
#: Simpler methods first: among methods the data cannot tell apart, the simplest is advised.
METHOD_COMPLEXITY = ("prior_shift", "temperature", "platt", "beta", "histogram", "isotonic",
                     "venn_abers", "scaling_binning", "dirichlet", "variable_tree", "lece",
                     "lecd", "composed", "lore", "swc", "swc_hh")
#: The calibration errors weighed beside the proper scores, with their names in the table.
CALIBRATION_ERRORS = {"ece": "ECE", "smooth_ece": "smooth ECE",
                      "laplace_kernel_calibration_error": "kCE"}
#: A probability below this for the outcome that happened is a confident miss: NLL
#: charges it at least -log(1e-3) = 6.9 nats, Brier at most 2.
CONFIDENT_MISS = 1e-3
#: Scores are step-shaped when on average at least this many held-out rows share each
#: distinct row of probabilities (a tree's leaves, a rounded score) ...
ROWS_PER_STEP = 20
#: ... or when they take at most this many distinct values.
MAX_STEPS = 10

Verdict = Literal["recommended", "keep_uncalibrated", "none_helps", "nothing_to_compare"]

#: Methods likely to help when every fitted method makes things worse, and why.
_STEP_SUGGESTIONS = {
    "isotonic": "a monotone step function fitted to the calibration rows: each group of "
                "tied scores (each leaf of a tree) gets its own observed frequency, and "
                "scores of exactly 0 or 1 move to what their rows show",
    "histogram": "equal-mass bins of the score, each at its (smoothed) observed frequency: "
                 "suits scores with few distinct values",
    "beta": "beta calibration maps the two ends of [0, 1] separately (Kull, Silva Filho & "
            "Flach 2017), so a score of 0 or 1 can move inwards without flattening the rest",
}
_SMOOTH_SUGGESTIONS = {
    "beta": "beta calibration (Kull, Silva Filho & Flach 2017): includes the identity, "
            "so it cannot be forced to flatten well-placed scores",
    "isotonic": "any monotone map, fitted to the calibration rows",
    "platt": "a sigmoid of the score (Platt 1999): two parameters instead of one",
}


@dataclass(frozen=True)
class Candidate:
    """One row of the comparison: the uncalibrated probabilities or a recalibration's."""

    name: str
    proba: NDArray[np.float64]
    id: str | None = None
    method: str | None = None
    variable: str | None = None


def _row_nll(labels: NDArray[np.intp], proba: NDArray[np.float64]) -> NDArray[np.float64]:
    return -np.log(np.clip(proba[np.arange(labels.size), labels], NLL_CLIP, 1.0))


def _row_brier(labels: NDArray[np.intp], proba: NDArray[np.float64]) -> NDArray[np.float64]:
    """Squared error summed over classes, per row (the table's Brier is its mean)."""
    return (np.square(proba).sum(axis=1) - 2.0 * proba[np.arange(labels.size), labels]
            + 1.0)


def paired_difference(losses: NDArray[np.float64], reference: NDArray[np.float64],
                      n_bootstrap: int, random_state: int,
                      sample_weight: NDArray[np.float64] | None = None
                      ) -> tuple[float, float, float]:
    """Mean of ``losses - reference`` with a paired percentile bootstrap 95% interval."""
    return paired_differences((losses - reference)[:, None], n_bootstrap, random_state,
                              sample_weight)[0]


def paired_differences(differences: NDArray[np.float64], n_bootstrap: int,
                       random_state: int, sample_weight: NDArray[np.float64] | None = None
                       ) -> list[tuple[float, float, float]]:
    """:func:`paired_difference` of each column of ``differences`` (n, m), every column
    with the same seeded resamples. Above 20,000 rows the resamples are an m-out-of-n
    bootstrap of a seeded 20,000-row subsample, their spread scaled by sqrt(m / n)
    (:func:`calibcore.metrics.subsample_plan`): drawing row resamples of a million
    rows took 2 s of a 9 s comparison, for the same interval of a mean. With
    ``sample_weight`` the means are weighted and each resampled row carries its weight
    (a resample of weight 0 is left out)."""
    if sample_weight is None:
        estimates = differences.mean(axis=0)
    else:
        estimates = sample_weight @ differences / sample_weight.sum()
    if not n_bootstrap:
        return [(float(e), float(e), float(e)) for e in estimates]
    plan = subsample_plan(differences.shape[0], random_state)
    rows = differences if plan.groups is None else differences[plan.groups]
    if sample_weight is None:
        centre = rows.mean(axis=0)
        means = np.concatenate([np.einsum("bi,ij->bj", counts, rows)
                                / counts.sum(axis=1)[:, None]
                                for counts in plan.blocks(n_bootstrap, random_state)])
    else:
        row_weights = sample_weight if plan.groups is None else sample_weight[plan.groups]
        centre = row_weights @ rows / row_weights.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.concatenate([np.einsum("bi,ij->bj", counts * row_weights, rows)
                                    / (counts @ row_weights)[:, None]
                                    for counts in plan.blocks(n_bootstrap, random_state)])
        means = means[np.isfinite(means).all(axis=1)]
    means = estimates + plan.scale * (means - centre)
    low, high = np.quantile(means, [(1 - CONFIDENCE_LEVEL) / 2, (1 + CONFIDENCE_LEVEL) / 2],
                            axis=0)
    return [(float(e), float(lo), float(hi)) for e, lo, hi in zip(estimates, low, high,
                                                                     strict=True)]


def _signed(value: float) -> str:
    """A signed difference, readable whether it is 0.2 or 3e-5."""
    return f"{value:+.4f}" if value == 0 or abs(value) >= 1e-3 else f"{value:+.1e}"


def _two(first: float, second: float) -> str:
    """"a against b" with enough decimals (4 to 8) to tell them apart."""
    decimals = next((d for d in range(4, 9) if f"{first:.{d}f}" != f"{second:.{d}f}"), 4)
    return f"{first:.{decimals}f} against {second:.{decimals}f}"


def _interval(difference: Sequence[float]) -> str:
    return f"{_signed(difference[1])} to {_signed(difference[2])}"


def _complexity(method: str | None) -> int:
    return METHOD_COMPLEXITY.index(method) if method in METHOD_COMPLEXITY else len(
        METHOD_COMPLEXITY)


def _called(candidates: list[Candidate], index: int) -> str:
    return "the uncalibrated model" if index == 0 else candidates[index].name


def _errors(row: dict[str, Any]) -> dict[str, float]:
    """The calibration errors of a table row that have a value."""
    return {key: float(row["values"][key]["value"]) for key in CALIBRATION_ERRORS
            if row["values"].get(key, {}).get("value") is not None}


def _worse_everywhere(rows: list[dict[str, Any]], brier: list[float], index: int) -> bool:
    """Whether a method makes every calibration error and Brier worse than uncalibrated."""
    before, after = _errors(rows[0]), _errors(rows[index])
    shared = before.keys() & after.keys()
    return bool(shared) and brier[index] > brier[0] and all(
        after[key] > before[key] for key in shared)


def _calibration_wins(rows: list[dict[str, Any]], first: int, second: int) -> int:
    """How many calibration errors ``first`` has lower than ``second``, minus the reverse."""
    a, b = _errors(rows[first]), _errors(rows[second])
    return sum(int(np.sign(b[key] - a[key])) for key in a.keys() & b.keys())


def score_shape(proba: NDArray[np.float64]) -> dict[str, Any]:
    """Whether scores are step-shaped (few distinct values, as a tree's leaves give) and
    how many rows are certain (a class at probability 1, the others at 0).

    ``n_distinct`` counts the distinct rows of probabilities when they are step-shaped;
    otherwise it may be a lower bound: the distinct rows of a leading block of twice the
    limit's rows are counted first, and more than the limit there already decides (the
    count only grows with more rows), which spares sorting every row of a large file.
    """
    limit = max(MAX_STEPS, proba.shape[0] / ROWS_PER_STEP)
    head = proba[:2 * int(limit) + 1]
    distinct = int(np.unique(head, axis=0).shape[0])
    if distinct <= limit and head.shape[0] < proba.shape[0]:
        distinct = int(np.unique(proba, axis=0).shape[0])
    certain = float(np.mean(proba.max(axis=1) >= 1.0 - NLL_CLIP))
    return {"n_distinct": distinct, "share_certain": certain,
            "step_shaped": distinct <= limit}


def _suggestions(shape: dict[str, Any], fitted: set[str | None]) -> list[dict[str, str]]:
    """Methods not fitted yet that are likely to help scores of this shape."""
    chosen = _STEP_SUGGESTIONS if shape["step_shaped"] else _SMOOTH_SUGGESTIONS
    return [{"method": method, "name": REGISTRY[method].display_name, "reason": reason}
            for method, reason in chosen.items() if method not in fitted]


def _mean(values: NDArray[np.float64], weights: NDArray[np.float64] | None,
          rows: NDArray[np.bool_] | None = None) -> float:
    """The (weighted) mean of ``values`` over ``rows`` (all rows if None)."""
    if rows is not None:
        values = values[rows]
        weights = None if weights is None else weights[rows]
    if weights is None:
        return float(values.mean())
    return float(weights @ values / weights.sum()) if weights.sum() > 0 else float("nan")


def explain_disagreement(labels: NDArray[np.intp], candidates: list[Candidate],
                         nll: list[NDArray[np.float64]], brier: list[float], by_nll: int,
                         by_brier: int, sample_weight: NDArray[np.float64] | None = None
                         ) -> str:
    """Why NLL favours candidate ``by_nll`` and Brier candidate ``by_brier``.

    When the rows where ``by_brier`` gives the outcome that happened a probability below
    :data:`CONFIDENT_MISS` carry NLL's whole preference (without them ``by_brier`` has
    the lower NLL too), those rows are named as the reason.
    """
    favoured, other = _called(candidates, by_nll), _called(candidates, by_brier)
    w = sample_weight
    nll_favoured, nll_other = _mean(nll[by_nll], w), _mean(nll[by_brier], w)
    brier_says = (f"Brier, which charges a confident mistake at most 2, favours {other} "
                  f"({_two(brier[by_brier], brier[by_nll])}).")
    p_true = candidates[by_brier].proba[np.arange(labels.size), labels]
    misses = p_true < CONFIDENT_MISS
    rest = ~misses
    if misses.any() and rest.any() and _mean(nll[by_brier], w, rest) <= _mean(
            nll[by_nll], w, rest):
        at = ("probability 0 (certain of another class)" if np.all(p_true[misses] <= NLL_CLIP)
              else f"a probability below {CONFIDENT_MISS:g} (near-certain of another class)")
        count = int(misses.sum())
        rows = f"{count:,} row{'s' if count > 1 else ''}"
        on_misses = _mean(nll[by_brier], w, misses)
        return (f"NLL and Brier disagree. NLL favours {favoured} ({_two(nll_favoured, nll_other)}"
                f") because {rows} of {other} give an outcome that happened "
                f"{at}, which NLL punishes without bound (here {on_misses:.1f}"
                f" nats per row, against {_mean(nll[by_brier], w, rest):.2f} on average over the "
                f"other rows); without {'them' if count > 1 else 'it'} {other} has the lower "
                f"NLL too ({_two(_mean(nll[by_brier], w, rest), _mean(nll[by_nll], w, rest))}). "
                f"{brier_says}")
    return (f"NLL and Brier disagree: NLL favours {favoured} ({_two(nll_favoured, nll_other)}"
            f"). {brier_says} NLL weighs confident mistakes far more than Brier does, which "
            "weighs every row's squared error alike; the calibration errors decide between "
            "them.")


def _none_helps(candidates: list[Candidate], rows: list[dict[str, Any]],
                brier: list[float], disagreement: str | None,
                shape: dict[str, Any]) -> dict[str, Any]:
    """Every fitted method is worse on every calibration error and Brier: say so."""
    changes = []
    for index in range(1, len(candidates)):
        before, after = _errors(rows[0]), _errors(rows[index])
        listed = ", ".join(f"{CALIBRATION_ERRORS[key]} {before[key]:.4f} → {after[key]:.4f}"
                           for key in CALIBRATION_ERRORS if key in before and key in after)
        named = f"{candidates[index].name}: " if len(candidates) > 2 else ""
        changes.append(f"{named}{listed}, Brier {brier[0]:.4f} → {brier[index]:.4f}")
    subject = ("every method fitted makes" if len(candidates) > 2
               else f"{candidates[1].name} makes")
    reasons = [f"No method fitted helps: {subject} the held-out calibration errors (ECE, "
               f"smooth ECE, kCE) and Brier worse than the uncalibrated probabilities ("
               + "; ".join(changes) + ")."]
    if disagreement:
        reasons.append(disagreement + " A lower NLL alone is no reason to use it.")
    steps = (f"The uncalibrated scores are step-shaped ({shape['n_distinct']:,} distinct "
             f"values over {candidates[0].proba.shape[0]:,} held-out rows"
             + (f", {shape['share_certain']:.0%} of the rows at 0 or 1"
                if shape["share_certain"] else "") + "), as a decision tree's are: a "
             "smooth map of the score with one or two parameters (temperature or Platt "
             "scaling) cannot correct each step. "
             if shape["step_shaped"] else "")
    reasons.append(f"{steps}Keep the uncalibrated probabilities, or try the methods listed "
                   "below.")
    return {"id": None, "name": "uncalibrated", "keep_uncalibrated": True,
            "verdict": "none_helps", "reasons": reasons}


def recommend(labels: NDArray[np.intp], candidates: list[Candidate], rows: list[dict[str, Any]],
              n_bootstrap: int, random_state: int,
              sample_weight: NDArray[np.float64] | None = None) -> dict[str, Any]:
    """Which probabilities to use, and why, from both proper scores and the calibration
    errors on the held-out rows (the rule is in the module's docstring).

    Parameters
    ----------
    labels : ndarray of shape (n,)
        Class indices of the held-out rows.
    candidates : list of Candidate
        The uncalibrated probabilities first, then each recalibration's, all (n, K).
    rows : list of dict
        The comparison table's rows, in the order of ``candidates`` (their calibration
        errors are read from it).
    sample_weight : ndarray of shape (n,), optional
        Row weights: NLL and Brier are weighted means, the paired intervals resample rows
        carrying their weights.

    Returns
    -------
    dict
        ``id`` and ``name`` of the advised probabilities (None and ``"uncalibrated"``
        when none is), ``keep_uncalibrated``, ``verdict`` (``recommended``,
        ``keep_uncalibrated``, ``none_helps`` or ``nothing_to_compare``), ``reasons``,
        ``differences`` (per method: paired NLL and Brier differences to the uncalibrated
        probabilities and to the best method, each as estimate, low, high),
        ``disagreement`` (which probabilities NLL and Brier favour and why, or None),
        ``worse_than_uncalibrated`` (methods worse on every calibration error and Brier),
        ``suggestions`` (methods likely to help, when none does) and ``score_shape``.
    """
    shape = score_shape(candidates[0].proba)
    empty: dict[str, Any] = {"differences": [], "disagreement": None,
                             "worse_than_uncalibrated": [], "suggestions": [],
                             "score_shape": shape}
    if len(candidates) < 2:
        return {"id": None, "name": None, "keep_uncalibrated": True,
                "verdict": "nothing_to_compare", "reasons": ["no recalibration to compare."],
                **empty}
    nll = [_row_nll(labels, c.proba) for c in candidates]
    brier_rows = [_row_brier(labels, c.proba) for c in candidates]
    nll_means = [_mean(loss, sample_weight) for loss in nll]
    brier = [_mean(loss, sample_weight) for loss in brier_rows]
    methods = range(1, len(candidates))
    best_nll = min(methods, key=lambda i: nll_means[i])
    best_brier = min(methods, key=lambda i: brier[i])
    worse = [i for i in methods if _worse_everywhere(rows, brier, i)]
    eligible = [i for i in methods if i not in worse]
    front = _front_runner(rows, nll_means, brier, eligible)
    everyone = range(len(candidates))
    by_nll = min(everyone, key=lambda i: nll_means[i])
    by_brier = min(everyone, key=lambda i: brier[i])
    # the favourites' differences on both scores lead, to tell a disagreement from noise
    columns = ([nll[by_nll] - nll[by_brier], brier_rows[by_brier] - brier_rows[by_nll]]
               + [nll[i] - nll[0] for i in methods] + [nll[i] - nll[best_nll] for i in methods]
               + [brier_rows[i] - brier_rows[0] for i in methods]
               + [brier_rows[i] - brier_rows[best_brier] for i in methods])
    if front is not None:
        columns += ([nll[i] - nll[front] for i in methods]
                    + [brier_rows[i] - brier_rows[front] for i in methods])
    every = paired_differences(np.column_stack(columns), n_bootstrap, random_state,
                               sample_weight)
    favourites, paired = every[:2], every[2:]
    m = len(candidates) - 1
    nll_base, nll_best, brier_base, brier_best = (paired[k * m:(k + 1) * m] for k in range(4))
    differences = [{"id": candidates[i].id, "name": candidates[i].name,
                    "nll_minus_uncalibrated": list(nll_base[i - 1]),
                    "nll_minus_best": list(nll_best[i - 1]),
                    "brier_minus_uncalibrated": list(brier_base[i - 1]),
                    "brier_minus_best": list(brier_best[i - 1])} for i in methods]
    disagreement = None
    if by_nll != by_brier and (favourites[0][2] < 0 or favourites[1][2] < 0):
        disagreement = {"nll_favours": candidates[by_nll].name,
                        "brier_favours": candidates[by_brier].name,
                        "reason": explain_disagreement(labels, candidates, nll, brier, by_nll,
                                                       by_brier, sample_weight)}
    common = {"differences": differences, "disagreement": disagreement,
              "worse_than_uncalibrated": [candidates[i].name for i in worse],
              "score_shape": shape}
    if front is None:
        advice = _none_helps(candidates, rows, brier,
                             None if disagreement is None else disagreement["reason"], shape)
        fitted = {c.method for c in candidates[1:]}
        return {**advice, **common, "suggestions": _suggestions(shape, fitted)}
    advice = _advise(candidates, rows, nll_means, brier, front, eligible,
                     _Paired(nll_base, brier_base, paired[4 * m:5 * m], paired[5 * m:]))
    reasons = advice.pop("reasons")
    if worse:
        names = ", ".join(candidates[i].name for i in worse)
        reasons.append(f"{names} {'makes' if len(worse) == 1 else 'make'} every calibration "
                       "error (ECE, smooth ECE, kCE) and Brier worse than the uncalibrated "
                       f"probabilities, so {'it is' if len(worse) == 1 else 'they are'} not "
                       "advised whatever NLL says.")
    if disagreement:
        reasons.append(disagreement["reason"])
    return {**advice, **common, "reasons": reasons, "suggestions": []}


def _front_runner(rows: list[dict[str, Any]], nll: list[float], brier: list[float],
                  eligible: list[int]) -> int | None:
    """The method best on NLL and Brier; when they disagree, the one of the two better on
    more calibration errors (Brier's on a tie). None when no method is eligible."""
    if not eligible:
        return None
    by_nll = min(eligible, key=lambda i: nll[i])
    by_brier = min(eligible, key=lambda i: brier[i])
    if by_nll == by_brier:
        return by_nll
    return by_nll if _calibration_wins(rows, by_nll, by_brier) > 0 else by_brier


@dataclass(frozen=True)
class _Paired:
    """Paired differences (estimate, low, high) of each method, in method order: NLL and
    Brier against the uncalibrated probabilities and against the front-runner."""

    nll_base: list[tuple[float, float, float]]
    brier_base: list[tuple[float, float, float]]
    nll_front: list[tuple[float, float, float]]
    brier_front: list[tuple[float, float, float]]

    def improves(self, index: int) -> bool:
        """Beyond the noise on NLL or Brier, and worse on neither."""
        nll, brier = self.nll_base[index - 1], self.brier_base[index - 1]
        return (nll[2] < 0 or brier[2] < 0) and nll[1] <= 0 and brier[1] <= 0

    def tied_with_front(self, index: int) -> bool:
        """Neither NLL nor Brier tells the method apart from the front-runner."""
        nll, brier = self.nll_front[index - 1], self.brier_front[index - 1]
        return nll[1] <= 0 <= nll[2] and brier[1] <= 0 <= brier[2]


def _advise(candidates: list[Candidate], rows: list[dict[str, Any]], nll: list[float],
            brier: list[float], front: int, eligible: list[int],
            paired: _Paired) -> dict[str, Any]:
    """The front-runner, a simpler method it cannot be told from, or the uncalibrated
    probabilities when it does not beat them beyond the bootstrap noise."""
    level = f"{CONFIDENCE_LEVEL:.0%}"
    name = candidates[front].name
    on_nll, on_brier = paired.nll_base[front - 1], paired.brier_base[front - 1]
    said = (f"NLL {nll[front]:.4f} against {nll[0]:.4f} uncalibrated (paired {level} "
            f"interval of the difference {_interval(on_nll)}), Brier {brier[front]:.4f} "
            f"against {brier[0]:.4f} ({_interval(on_brier)})")
    if not paired.improves(front):
        worse_on = [score for score, (_, low, _) in (("NLL", on_nll), ("Brier", on_brier))
                    if low > 0]
        why = (f"it worsens {' and '.join(worse_on)} beyond the bootstrap noise" if worse_on
               else "both intervals include 0: the change is within the bootstrap noise")
        return {"id": None, "name": "uncalibrated", "keep_uncalibrated": True,
                "verdict": "keep_uncalibrated", "reasons": [
                    f"no method improves the held-out NLL or Brier beyond the bootstrap noise "
                    f"without worsening the other: the front-runner, {name}, has {said}; "
                    f"{why}.",
                    "keep the uncalibrated probabilities, or collect more calibration rows."]}
    tied = [i for i in eligible if paired.improves(i) and paired.tied_with_front(i)]
    chosen = min(tied, key=lambda i: (_complexity(candidates[i].method), nll[i]))
    by_nll = min(eligible, key=lambda i: nll[i])
    by_brier = min(eligible, key=lambda i: brier[i])
    among = ("" if len(eligible) == len(candidates) - 1
             else " of the methods that do not worsen every calibration error and Brier")
    if by_nll == by_brier:
        lead = f"the lowest held-out NLL and Brier{among}"
    else:
        score, other, other_score = (("NLL", by_brier, "Brier") if front == by_nll
                                     else ("Brier", by_nll, "NLL"))
        lead = (f"the lowest held-out {score}{among}, and lower calibration errors than "
                f"{candidates[other].name} (the lowest {other_score})")
    reasons = [f"{name} has {lead}: {said}."]
    if chosen != front:
        reasons.append(f"{candidates[chosen].name} is simpler and neither its NLL nor its "
                       f"Brier can be told apart from {name}'s (differences "
                       f"{_interval(paired.nll_front[chosen - 1])} and "
                       f"{_interval(paired.brier_front[chosen - 1])}, both include 0).")
    reasons += _side_effects(rows[0], rows[chosen], candidates[chosen].name)
    return {"id": candidates[chosen].id, "name": candidates[chosen].name,
            "keep_uncalibrated": False, "verdict": "recommended", "reasons": reasons}


def _side_effects(before: dict[str, Any], after: dict[str, Any], name: str) -> list[str]:
    """What else changes with the advised method: calibration error and accuracy."""
    notes = []
    old, new = before["values"]["smooth_ece"], after["values"]["smooth_ece"]
    if old["value"] is not None and new["value"] is not None:
        notes.append(f"smooth ECE {old['value']:.4f} → {new['value']:.4f} with {name}.")
    old_acc, new_acc = before["values"]["accuracy"]["value"], after["values"]["accuracy"]["value"]
    if abs(new_acc - old_acc) > 1e-12:
        change = "drops" if new_acc < old_acc else "rises"
        notes.append(f"accuracy {change} from {old_acc:.4f} to {new_acc:.4f} (this method can "
                     "change the top class).")
    return notes


__all__ = ["CALIBRATION_ERRORS", "CONFIDENCE_LEVEL", "METHOD_COMPLEXITY", "Candidate", "Verdict",
           "explain_disagreement", "paired_difference", "paired_differences", "recommend",
           "score_shape"]
