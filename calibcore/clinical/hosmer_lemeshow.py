"""The Hosmer-Lemeshow (1980) goodness-of-fit statistic over risk groups.

Groups at the deciles of p (or other quantiles), events against summed probabilities,
referred to chi-squared with groups - 2 degrees of freedom. Its known caveats travel
with the result (:data:`HOSMER_LEMESHOW_CAVEAT`): the p-value depends on the grouping,
the test has little power in small samples and rejects negligible miscalibration in
large ones (Hosmer et al. 1997; Van Calster et al. 2019).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from calibcore._validation import check_positive_int, check_predictions
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError

HOSMER_LEMESHOW_CAVEAT = (
    "depends on the grouping (other group counts or cut points give other p-values), has "
    "low power in small samples and rejects trivial miscalibration in large ones; read "
    "it beside the curve, never alone")


@dataclass(frozen=True)
class HosmerLemeshow:
    """The Hosmer-Lemeshow statistic over risk groups at the quantiles of p.

    Attributes
    ----------
    value : float
        ``sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))``.
    df : int
        Groups - 2.
    p_value : float
        Upper tail of chi-squared with ``df`` degrees of freedom.
    n_groups : int
        Groups used (fewer than asked when quantiles of p coincide).
    observed, expected : tuple of float
        Events and summed p per group.
    sizes : tuple of float
        Rows per group (their total weight, with row weights).
    caveat : str
    """

    value: float
    df: int
    p_value: float
    n_groups: int
    observed: tuple[float, ...]
    expected: tuple[float, ...]
    sizes: tuple[float, ...]
    caveat: str = HOSMER_LEMESHOW_CAVEAT



def hosmer_lemeshow(y_true: ArrayLike, y_prob: ArrayLike, *,
                    n_groups: int = 10,
                    sample_weight: ArrayLike | None = None) -> HosmerLemeshow:
    """The Hosmer-Lemeshow (1980) statistic of binary outcomes over ``n_groups`` risk groups.

    The groups are the intervals ``(q_{k-1}, q_k]`` between the quantiles
    ``q_k = quantile(p, k / n_groups)`` (numpy's and R's default), the lowest closed, as
    ``cut(p, quantile(p, 0:g / g), include.lowest = TRUE)`` in R; coinciding quantiles
    merge groups. The statistic is ``sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))`` with
    O_g events and E_g summed p, referred to chi-squared with groups - 2 degrees of
    freedom (Hosmer & Lemeshow 1980).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        0/1 outcomes.
    y_prob : array-like of shape (n,) or (n, 2)
        P(y = 1), or both classes' probabilities.
    n_groups : int, default=10
    sample_weight : array-like of shape (n,), optional
        Non-negative frequency weights: the groups are at the weighted quantiles and
        O_g, E_g and n_g are weighted sums, exactly the rows repeated by their weights
        for integer weights (:func:`weighted_quantiles`).

    Returns
    -------
    HosmerLemeshow

    Examples
    --------
    >>> result = hosmer_lemeshow([0, 0, 1, 0, 1, 1, 0, 1], [.1, .2, .3, .4, .5, .6, .7, .8],
    ...                          n_groups=4)
    >>> result.n_groups, result.df, result.sizes
    (4, 2, (2, 2, 2, 2))
    """
    labels, proba = check_predictions(y_true, y_prob)
    if proba.shape[1] != 2:
        raise CalibrationInputError("y_prob must be P(y = 1) of a binary outcome (shape (n,) "
                                    f"or (n, 2)), got {proba.shape[1]} columns.")
    n_groups = check_positive_int(n_groups, "n_groups", minimum=3)
    weights = check_sample_weight(sample_weight, labels.size)
    order = np.argsort(proba[:, 1], kind="stable")
    return grouped_on_sorted(labels[order].astype(np.float64), proba[order, 1], n_groups,
                             None if weights is None else weights[order])


def weighted_quantiles(p: NDArray[np.float64], weights: NDArray[np.float64],
                       levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """numpy's "linear" quantiles of sorted ``p`` whose row i is repeated ``weights[i]``
    times: position ``h = (sum w - 1) q`` of the repeated rows, between the rows holding
    positions floor(h) and ceil(h). Exactly the repeated rows' quantiles for integer
    weights; rows of zero weight hold no position."""
    ends = np.cumsum(weights)
    position = (ends[-1] - 1.0) * levels
    low, high = np.floor(position), np.ceil(position)
    last = p.size - 1
    below = p[np.minimum(np.searchsorted(ends, low, side="right"), last)]
    above = p[np.minimum(np.searchsorted(ends, high, side="right"), last)]
    fraction = position - low
    # numpy's lerp: from the upper end past the midpoint (the same floats as np.quantile)
    return np.where(fraction >= 0.5, above - (above - below) * (1.0 - fraction),
                    below + (above - below) * fraction)


def grouped_on_sorted(y: NDArray[np.float64], p: NDArray[np.float64],
                      n_groups: int, weights: NDArray[np.float64] | None = None
                      ) -> HosmerLemeshow:
    """:func:`hosmer_lemeshow` of outcomes ``y`` sorted by their probabilities ``p``
    (validated): the groups are runs of the sorted rows, summed by cumulative sums. With
    ``weights`` (frequency weights), the quantiles, events, summed p and group sizes are
    those of the rows repeated by their weights."""
    levels = np.linspace(0.0, 1.0, n_groups + 1)
    breaks = np.unique(np.quantile(p, levels, method="linear") if weights is None
                       else weighted_quantiles(p, weights, levels))
    # group k holds (breaks[k], breaks[k+1]], the first group its lower end too
    ends = np.searchsorted(p, breaks[1:], side="right")
    starts = np.concatenate([[0], ends[:-1]])
    row_weights = np.ones(p.size) if weights is None else weights
    cumulative_w = np.concatenate([[0.0], np.cumsum(row_weights)])
    sizes = cumulative_w[ends] - cumulative_w[starts]
    used = sizes > 0
    starts, ends, sizes = starts[used], ends[used], sizes[used]
    cumulative_y = np.concatenate([[0.0], np.cumsum(y * row_weights)])
    cumulative_p = np.concatenate([[0.0], np.cumsum(p * row_weights)])
    observed = cumulative_y[ends] - cumulative_y[starts]
    expected = cumulative_p[ends] - cumulative_p[starts]
    denominator = expected * (1.0 - expected / sizes)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(observed == expected, 0.0,
                         (observed - expected) ** 2 / denominator)
    value = float(terms.sum())
    df = int(sizes.size - 2)
    p_value = float(stats.chi2.sf(value, df)) if df > 0 else float("nan")
    return HosmerLemeshow(value=value, df=df, p_value=p_value, n_groups=int(sizes.size),
                          observed=tuple(float(v) for v in observed),
                          expected=tuple(float(v) for v in expected),
                          sizes=tuple(float(v) for v in sizes))


__all__ = ["HOSMER_LEMESHOW_CAVEAT", "HosmerLemeshow", "grouped_on_sorted", "hosmer_lemeshow",
           "weighted_quantiles"]
