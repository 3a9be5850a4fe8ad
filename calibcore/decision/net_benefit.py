"""Decision curves: the net benefit of acting on a model's probabilities.

A person treats a row (acts on it: treats, investigates, intervenes) when its
probability of the event is at least a threshold ``t``. Choosing ``t`` says how much a
missed event costs against an unneeded treatment: at ``t`` one is indifferent between
treating and not, so a false positive weighs ``t / (1 - t)`` true positives. The *net
benefit* of the model at ``t`` counts the true positives and charges the false
positives that weight (Vickers & Elkin 2006, the net benefit formula):

    NB(t) = TP(t) / n - FP(t) / n * t / (1 - t),

with TP(t) and FP(t) the rows with ``p >= t`` whose event did and did not happen. Its two
references: *treat all*, NB(t) = prevalence - (1 - prevalence) t / (1 - t), and *treat
none*, 0. A model is worth using at ``t`` only where its curve is above both.

The event is one class: for two classes, class 1 (``y_prob`` is P(class 1)); for more,
one class against the rest, by default the last (``positive_class``).

**Bands.** Rows are resampled with replacement (percentile bootstrap, seeded through
``random_state``). Net benefit at every threshold depends on the rows only through how
many rows of each outcome fall between consecutive thresholds, so a resample is drawn
as those counts: a multinomial draw of ``n`` rows over the cells (outcome, threshold
interval) with the observed frequencies, which is exactly the distribution of the cell
counts of ``n`` rows drawn with replacement, and costs nothing per row. Two score
vectors on the same rows (a model and its recalibration) are resampled together, over
the cells (outcome, interval of the first, interval of the second), so the interval of
their difference is paired.

**Row weights.** With ``sample_weight`` (a row standing for ``w_i`` examples of the
population), TP, FP and n are sums of weights: NB(t) = (sum w TP - sum w FP t / (1 - t))
/ sum w, so integer weights give exactly what the rows repeated by their weights give.
The bootstrap then resamples rows with replacement, each drawn row carrying its weight
(a resample's cell totals are the sums of its drawn rows' weights; the denominator is
its own total weight). Up to :data:`ROW_BOOTSTRAP_MAX_ROWS` rows the rows themselves are
drawn (one pass over the rows per resample); above, a resample draws each cell's count
exactly as without weights and the total weight of the ``c`` rows it draws from a cell
as ``c`` times the cell's mean weight plus a normal deviation of variance ``c`` times
the variance of its weights: the sum's first two moments exactly, and exact outright when
a cell's weights are equal (as negative downsampling's, one weight per outcome, are);
the global measures' bootstrap draws cells' weights the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import (
    check_in_range,
    check_positive_int,
    check_predictions,
    check_probabilities,
)
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics._resampling import ROW_BOOTSTRAP_MAX_ROWS

#: Thresholds a decision curve is drawn at by default: 0.01, 0.02, ..., 0.99.
DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(round(k / 100, 2) for k in range(1, 100))
#: Most thresholds one curve takes.
MAX_THRESHOLDS = 200


@dataclass(frozen=True)
class DecisionCurve:
    """Net benefit of a model and of the two default strategies at each threshold.

    Attributes
    ----------
    thresholds : ndarray of shape (T,)
        Increasing, in (0, 1).
    model, treat_all, treat_none : ndarray of shape (T,)
        Net benefit of treating the rows with ``p >= t``, every row, no row.
    lower, upper : ndarray of shape (T,)
        Percentile bootstrap band of ``model`` (NaN without resamples).
    n : int
        Rows.
    prevalence : float
        Frequency of the event (the positive class; of the total weight with
        ``sample_weight``).
    positive_class : int
        The class whose probability is thresholded.
    n_bootstrap : int
    confidence_level : float
    """

    thresholds: NDArray[np.float64]
    model: NDArray[np.float64]
    treat_all: NDArray[np.float64]
    treat_none: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    n: int
    prevalence: float
    positive_class: int
    n_bootstrap: int
    confidence_level: float


@dataclass(frozen=True)
class NetBenefitDifference:
    """Net benefit of a candidate against a reference on the same rows.

    Attributes
    ----------
    thresholds : ndarray of shape (T,)
    reference, candidate : ndarray of shape (T,)
        Net benefit of each.
    difference : ndarray of shape (T,)
        ``candidate - reference``: positive where the candidate's decisions are worth more.
    lower, upper : ndarray of shape (T,)
        Paired percentile bootstrap interval of ``difference`` (NaN without resamples).
    changed : ndarray of shape (T,)
        Fraction of the rows (of the total weight, with ``sample_weight``) treated by one
        and not the other: how many decisions the candidate changes, whatever they are
        worth.
    n : int
    prevalence : float
    positive_class : int
    n_bootstrap : int
    confidence_level : float
    """

    thresholds: NDArray[np.float64]
    reference: NDArray[np.float64]
    candidate: NDArray[np.float64]
    difference: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    changed: NDArray[np.float64]
    n: int
    prevalence: float
    positive_class: int
    n_bootstrap: int
    confidence_level: float


def check_thresholds(thresholds: ArrayLike, *, name: str = "thresholds") -> NDArray[np.float64]:
    """Validate decision thresholds: numbers in (0, 1), increasing without repeats, at
    most :data:`MAX_THRESHOLDS`.

    Parameters
    ----------
    thresholds : array-like of shape (T,)
    name : str
        Name used in error messages.

    Returns
    -------
    ndarray of shape (T,)

    Raises
    ------
    CalibrationInputError
        With code ``invalid_thresholds`` and a message naming the offending values.
    """
    try:
        values = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    except (TypeError, ValueError):
        raise _threshold_error(f"{name} must be numbers in (0, 1), got {thresholds!r}.") \
            from None
    if values.ndim != 1 or values.size == 0:
        raise _threshold_error(f"{name} must be a non-empty list of numbers in (0, 1).")
    if values.size > MAX_THRESHOLDS:
        raise _threshold_error(f"{name} has {values.size} values; at most {MAX_THRESHOLDS} "
                               "are drawn (a step of 0.005 over (0, 1) is 199).")
    outside = values[~((values > 0.0) & (values < 1.0))]  # NaN fails both comparisons
    if outside.size:
        listed = ", ".join(f"{v:g}" for v in outside[:5])
        raise _threshold_error(
            f"{name} must lie strictly between 0 and 1 (a threshold is a probability at "
            f"which one starts to act; 0 and 1 give no decision); {listed} do(es) not.")
    steps = np.flatnonzero(np.diff(values) <= 0.0)
    if steps.size:
        at = int(steps[0])
        raise _threshold_error(
            f"{name} must increase without repeats; {values[at]:g} is followed by "
            f"{values[at + 1]:g} (position {at + 1}). Give them sorted, each once.")
    return values


def _threshold_error(message: str) -> CalibrationInputError:
    return CalibrationInputError(message, code="invalid_thresholds")


def _event(y_true: ArrayLike, y_prob: ArrayLike, positive_class: int | None
           ) -> tuple[NDArray[np.float64], NDArray[np.bool_], int, NDArray[np.float64]]:
    """The event's probability and occurrence per row, the class, and all probabilities."""
    labels, proba = check_predictions(y_true, y_prob)
    n_classes = proba.shape[1]
    chosen = n_classes - 1 if positive_class is None else positive_class
    if isinstance(chosen, bool) or not isinstance(chosen, int | np.integer) or not (
            0 <= chosen < n_classes):
        raise CalibrationInputError(
            f"positive_class must be a class index in 0..{n_classes - 1}, got "
            f"{positive_class!r}.", code="invalid_parameters")
    return proba[:, chosen], labels == chosen, int(chosen), proba


def _intervals(scores: NDArray[np.float64], thresholds: NDArray[np.float64]) -> NDArray[np.intp]:
    """For each row, how many thresholds are <= its score: the row is treated at
    thresholds ``0 .. k - 1`` (``p >= t``)."""
    return np.searchsorted(thresholds, scores, side="right")


def _curve_from_counts(positives: NDArray[np.float64], negatives: NDArray[np.float64],
                       n: float | NDArray[np.float64],
                       odds: NDArray[np.float64]) -> NDArray[np.float64]:
    """Net benefit at each threshold from the rows per threshold interval.

    ``positives`` and ``negatives`` have shape (..., T + 1): rows of each outcome whose
    score passes exactly ``k`` thresholds; a row passing ``k`` is treated at thresholds
    below ``k``, so TP at threshold ``j`` is the sum over ``k > j``.
    """
    true_positives = np.cumsum(positives[..., ::-1], axis=-1)[..., ::-1][..., 1:]
    false_positives = np.cumsum(negatives[..., ::-1], axis=-1)[..., ::-1][..., 1:]
    return (true_positives - false_positives * odds) / n


def _treat_all(prevalence: float, odds: NDArray[np.float64]) -> NDArray[np.float64]:
    return prevalence - (1.0 - prevalence) * odds


def _band(resampled: NDArray[np.float64], level: float
          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    low, high = np.quantile(resampled, [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=0)
    return low, high


def _resampled_cells(counts: NDArray[np.int64], n_bootstrap: int, random_state: int
                     ) -> tuple[NDArray[np.intp], NDArray[np.int64]]:
    """Occupied cells and their counts in each of ``n_bootstrap`` row resamples, shape
    (n_bootstrap, occupied cells): a multinomial draw of ``n`` rows over the cells."""
    occupied = np.flatnonzero(counts)
    n = int(counts.sum())
    rng = np.random.default_rng(random_state)
    return occupied, rng.multinomial(n, counts[occupied] / n, size=n_bootstrap)


def _weighted_resamples(codes: NDArray[np.intp], weights: NDArray[np.float64], n_cells: int,
                        n_bootstrap: int, random_state: int
                        ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Cell totals of weight in each of ``n_bootstrap`` row resamples, shape
    (n_bootstrap, n_cells), and each resample's total weight, shape (n_bootstrap, 1):
    ``n`` rows drawn with replacement, each carrying its weight (drawn per cell above
    :data:`ROW_BOOTSTRAP_MAX_ROWS` rows; module docstring, "Row weights")."""
    rng = np.random.default_rng(random_state)
    n = codes.size
    totals = np.zeros((n_bootstrap, n_cells))
    if n <= ROW_BOOTSTRAP_MAX_ROWS:
        for resample in range(n_bootstrap):
            drawn = np.bincount(rng.integers(0, n, size=n), minlength=n)
            totals[resample] = np.bincount(codes, drawn * weights, minlength=n_cells)
        return totals, totals.sum(axis=1, keepdims=True)
    counts = np.bincount(codes, minlength=n_cells)
    occupied = np.flatnonzero(counts)
    rows = counts[occupied].astype(np.float64)
    mean = np.bincount(codes, weights, minlength=n_cells)[occupied] / rows
    spread = np.sqrt(np.maximum(
        np.bincount(codes, weights * weights, minlength=n_cells)[occupied] / rows - mean**2,
        0.0))
    drawn = rng.multinomial(n, rows / n, size=n_bootstrap).astype(np.float64)
    mass = drawn * mean
    if spread.any():
        mass += np.sqrt(drawn) * spread * rng.standard_normal(drawn.shape)
    totals[:, occupied] = np.maximum(mass, 0.0)
    return totals, totals.sum(axis=1, keepdims=True)


def decision_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    thresholds: ArrayLike = DEFAULT_THRESHOLDS,
    positive_class: int | None = None,
    n_bootstrap: int = 200,
    confidence_level: float = 0.95,
    random_state: int = 0,
    sample_weight: ArrayLike | None = None,
) -> DecisionCurve:
    """Net benefit of acting on the model at each threshold, with a bootstrap band, beside
    treat all and treat none (Vickers & Elkin 2006, the net benefit formula).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices ``0 .. K-1``.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) of a binary problem, or one column per class.
    thresholds : array-like of shape (T,), default 0.01, 0.02, ..., 0.99
        Increasing, in (0, 1), at most :data:`MAX_THRESHOLDS`. A row is treated at ``t``
        when its probability of the event is ``>= t``.
    positive_class : int, optional
        The event's class; default the last (class 1 of a binary problem). With more
        classes the curve is that class against the rest.
    n_bootstrap : int, default=200
        Row resamples of the band (0: no band, NaN).
    confidence_level : float, default=0.95
    random_state : int, default=0
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights: TP, FP and n become sums of weights (module
        docstring, "Row weights"); the band resamples rows carrying their weights.

    Returns
    -------
    DecisionCurve

    Examples
    --------
    >>> curve = decision_curve([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9], thresholds=[0.5],
    ...                        n_bootstrap=0)
    >>> float(curve.model[0])  # TP 1, FP 1 of 4 rows, odds 1: 1/4 - 1/4
    0.0
    >>> float(curve.treat_all[0]), curve.prevalence
    (0.0, 0.5)
    """
    scores, event, chosen, _ = _event(y_true, y_prob, positive_class)
    cuts = check_thresholds(thresholds)
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=0)
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1,
                           inclusive=False)
    weights = check_sample_weight(sample_weight, scores.size)
    n, slots = scores.size, cuts.size + 1
    odds = cuts / (1.0 - cuts)
    codes = _intervals(scores, cuts) * 2 + event
    counts = np.bincount(codes, minlength=2 * slots)
    by_outcome = (counts if weights is None else np.bincount(
        codes, weights, minlength=2 * slots)).reshape(slots, 2).astype(np.float64)
    total = float(n) if weights is None else float(weights.sum())
    model = _curve_from_counts(by_outcome[:, 1], by_outcome[:, 0], total, odds)
    prevalence = float(by_outcome[:, 1].sum() / total)
    lower = upper = np.full(cuts.size, np.nan)
    if n_bootstrap and weights is not None:
        cell_weights, totals = _weighted_resamples(codes, weights, 2 * slots, n_bootstrap,
                                                   random_state)
        cells = cell_weights.reshape(n_bootstrap, slots, 2)
        lower, upper = _band(_curve_from_counts(cells[..., 1], cells[..., 0], totals, odds),
                             level)
    elif n_bootstrap:
        occupied, drawn = _resampled_cells(counts, n_bootstrap, random_state)
        flat = np.zeros((n_bootstrap, 2 * slots))
        flat[:, occupied] = drawn
        cells = flat.reshape(n_bootstrap, slots, 2)
        lower, upper = _band(_curve_from_counts(cells[..., 1], cells[..., 0], n, odds), level)
    return DecisionCurve(cuts, model, _treat_all(prevalence, odds), np.zeros(cuts.size),
                         lower, upper, n, prevalence, chosen, n_bootstrap, level)


def net_benefit(y_true: ArrayLike, y_prob: ArrayLike, *,
                thresholds: ArrayLike = DEFAULT_THRESHOLDS,
                positive_class: int | None = None,
                sample_weight: ArrayLike | None = None) -> NDArray[np.float64]:
    """Net benefit of the model at each threshold, shape (T,); see :func:`decision_curve`.

    Examples
    --------
    >>> net_benefit([0, 1, 1], [0.2, 0.7, 0.3], thresholds=[0.25, 0.5]).round(4).tolist()
    [0.6667, 0.3333]
    """
    return decision_curve(y_true, y_prob, thresholds=thresholds, positive_class=positive_class,
                          n_bootstrap=0, sample_weight=sample_weight).model


def net_benefit_difference(
    y_true: ArrayLike,
    reference_prob: ArrayLike,
    candidate_prob: ArrayLike,
    *,
    thresholds: ArrayLike = (0.1, 0.2, 0.3),
    positive_class: int | None = None,
    n_bootstrap: int = 200,
    confidence_level: float = 0.95,
    random_state: int = 0,
    sample_weight: ArrayLike | None = None,
) -> NetBenefitDifference:
    """Net benefit of ``candidate_prob`` minus that of ``reference_prob`` on the same rows,
    with a paired percentile bootstrap interval: does the candidate (a recalibration, say)
    change what one would do, and is that worth anything?

    Parameters
    ----------
    y_true : array-like of shape (n,)
    reference_prob, candidate_prob : array-like of shape (n,) or (n, K)
        Two sets of probabilities of the same rows and classes.
    thresholds : array-like of shape (T,), default (0.1, 0.2, 0.3)
    positive_class : int, optional
        As in :func:`decision_curve`.
    n_bootstrap : int, default=200
        Row resamples, shared by the two (0: no interval, NaN).
    confidence_level : float, default=0.95
    random_state : int, default=0
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights, as in :func:`decision_curve`; the paired resamples draw
        rows carrying their weights.

    Returns
    -------
    NetBenefitDifference

    Examples
    --------
    >>> result = net_benefit_difference([0, 1, 1, 0], [0.6, 0.7, 0.4, 0.1],
    ...                                 [0.4, 0.7, 0.6, 0.1], thresholds=[0.5],
    ...                                 n_bootstrap=0)
    >>> float(result.reference[0]), float(result.candidate[0]), float(result.difference[0])
    (0.0, 0.5, 0.5)
    """
    reference, event, chosen, proba = _event(y_true, reference_prob, positive_class)
    candidate = _candidate_scores(candidate_prob, proba.shape, chosen)
    cuts = check_thresholds(thresholds)
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=0)
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1,
                           inclusive=False)
    weights = check_sample_weight(sample_weight, reference.size)
    n, slots = reference.size, cuts.size + 1
    odds = cuts / (1.0 - cuts)
    codes = (_intervals(reference, cuts) * slots + _intervals(candidate, cuts)) * 2 + event
    counts = np.bincount(codes, minlength=2 * slots * slots)
    grid = (counts if weights is None else np.bincount(
        codes, weights, minlength=2 * slots * slots)).reshape(slots, slots, 2).astype(np.float64)
    total = float(n) if weights is None else float(weights.sum())
    reference_nb = _curve_from_counts(grid[..., 1].sum(1), grid[..., 0].sum(1), total, odds)
    candidate_nb = _curve_from_counts(grid[..., 1].sum(0), grid[..., 0].sum(0), total, odds)
    lower = upper = np.full(cuts.size, np.nan)
    if n_bootstrap and weights is not None:
        cell_weights, totals = _weighted_resamples(codes, weights, 2 * slots * slots,
                                                   n_bootstrap, random_state)
        grids = cell_weights.reshape(n_bootstrap, slots, slots, 2)
        lower, upper = _band(
            _curve_from_counts(grids[..., 1].sum(1), grids[..., 0].sum(1), totals, odds)
            - _curve_from_counts(grids[..., 1].sum(2), grids[..., 0].sum(2), totals, odds),
            level)
    elif n_bootstrap:
        occupied, drawn = _resampled_cells(counts, n_bootstrap, random_state)
        cell_ref, cell_cand = (occupied // 2) // slots, (occupied // 2) % slots
        cell_event = occupied % 2
        differences = np.empty((n_bootstrap, cuts.size))
        for resample, weights in enumerate(drawn.astype(np.float64)):
            ref = np.bincount(cell_ref * 2 + cell_event, weights,
                              minlength=2 * slots).astype(np.float64).reshape(slots, 2)
            cand = np.bincount(cell_cand * 2 + cell_event, weights,
                               minlength=2 * slots).astype(np.float64).reshape(slots, 2)
            differences[resample] = (_curve_from_counts(cand[:, 1], cand[:, 0], n, odds)
                                     - _curve_from_counts(ref[:, 1], ref[:, 0], n, odds))
        lower, upper = _band(differences, level)
    rows_per_pair = grid.sum(axis=-1)  # (interval of the reference, of the candidate)
    changed = np.array([rows_per_pair[j + 1:, :j + 1].sum() + rows_per_pair[:j + 1, j + 1:].sum()
                        for j in range(cuts.size)]) / total
    prevalence = float(grid[..., 1].sum() / total)
    return NetBenefitDifference(cuts, reference_nb, candidate_nb, candidate_nb - reference_nb,
                                lower, upper, changed, n, prevalence, chosen,
                                n_bootstrap, level)


def _candidate_scores(candidate_prob: ArrayLike, shape: tuple[int, ...], chosen: int
                      ) -> NDArray[np.float64]:
    """The candidate's probability of the event, checked against the reference's shape."""
    proba = check_probabilities(candidate_prob, name="candidate_prob")
    if proba.shape != shape:
        raise CalibrationInputError(
            f"candidate_prob has shape {proba.shape} but the reference probabilities have "
            f"{shape}: give both for the same rows and classes.", code="invalid_input")
    return proba[:, chosen]


__all__ = ["DEFAULT_THRESHOLDS", "MAX_THRESHOLDS", "DecisionCurve", "NetBenefitDifference",
           "check_thresholds", "decision_curve", "net_benefit", "net_benefit_difference"]
