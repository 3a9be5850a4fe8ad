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
    sizes : tuple of int
        Rows per group.
    caveat : str
    """

    value: float
    df: int
    p_value: float
    n_groups: int
    observed: tuple[float, ...]
    expected: tuple[float, ...]
    sizes: tuple[int, ...]
    caveat: str = HOSMER_LEMESHOW_CAVEAT



def hosmer_lemeshow(y_true: ArrayLike, y_prob: ArrayLike, *,
                    n_groups: int = 10) -> HosmerLemeshow:
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
    order = np.argsort(proba[:, 1], kind="stable")
    return grouped_on_sorted(labels[order].astype(np.float64), proba[order, 1], n_groups)


def grouped_on_sorted(y: NDArray[np.float64], p: NDArray[np.float64],
                      n_groups: int) -> HosmerLemeshow:
    """:func:`hosmer_lemeshow` of outcomes ``y`` sorted by their probabilities ``p``
    (validated): the groups are runs of the sorted rows, summed by cumulative sums."""
    breaks = np.unique(np.quantile(p, np.linspace(0.0, 1.0, n_groups + 1),
                                   method="linear"))
    # group k holds (breaks[k], breaks[k+1]], the first group its lower end too
    ends = np.searchsorted(p, breaks[1:], side="right")
    starts = np.concatenate([[0], ends[:-1]])
    sizes = ends - starts
    used = sizes > 0
    starts, ends, sizes = starts[used], ends[used], sizes[used]
    cumulative_y = np.concatenate([[0.0], np.cumsum(y)])
    cumulative_p = np.concatenate([[0.0], np.cumsum(p)])
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
                          sizes=tuple(int(v) for v in sizes))


__all__ = ["HOSMER_LEMESHOW_CAVEAT", "HosmerLemeshow", "grouped_on_sorted", "hosmer_lemeshow"]
