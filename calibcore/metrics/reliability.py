"""Reliability diagrams: binned with per-bin 95% intervals (Wilson 1927, or the exact
interval of Clopper & Pearson 1934), and smooth (kernel-smoothed, relplot's
construction) with a bootstrap band."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.data.views import View, score_outcome
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.binning import Binning, assign_bins, bin_edges
from calibcore.metrics.consistent import ViewProblem, view_problems
from calibcore.metrics.kernel_smoothing import (
    DENSITY_EPS,
    KernelSmoother,
    grid_size,
    interpolate,
    reflected_gaussian_convolve,
    smooth_ece_rows,
)
from calibcore.metrics.proportions import INTERVAL_METHODS, IntervalMethod, proportion_interval

__all__ = [
    "BinnedReliability",
    "SmoothReliability",
    "binned_reliability",
    "diagram_of_sums",
    "smooth_reliability",
    "smooth_reliability_of_groups",
    "with_interval",
]


@dataclass(frozen=True)
class BinnedReliability:
    """A binned reliability diagram of one binary problem.

    Attributes
    ----------
    label : str
        Which problem ("top label", "class 3", ...).
    edges : ndarray of shape (B + 1,)
        Bin edges on [0, 1].
    count : ndarray of shape (B,)
        Rows per bin (empty bins included, with NaN statistics).
    mean_score : ndarray of shape (B,)
        Mean confidence (score) per bin.
    observed : ndarray of shape (B,)
        Observed frequency of the outcome per bin.
    observed_low, observed_high : ndarray of shape (B,)
        Two-sided confidence interval of ``observed`` (the ``interval`` method).
    n : int
        Rows in total.
    confidence_level : float
        Coverage of the interval, e.g. 0.95.
    weight : ndarray of shape (B,) or None
        With row weights: the total weight per bin (``mean_score`` and ``observed`` are
        then weighted means); None without.
    n_eff : ndarray of shape (B,) or None
        With row weights: Kish's effective sample size of each bin, (sum w)^2 / sum w^2,
        on which its interval rests; None without.
    interval : {"wilson", "clopper_pearson"}
        Which interval ``observed_low`` and ``observed_high`` are.
    """

    label: str
    edges: NDArray[np.float64]
    count: NDArray[np.int64]
    mean_score: NDArray[np.float64]
    observed: NDArray[np.float64]
    observed_low: NDArray[np.float64]
    observed_high: NDArray[np.float64]
    n: int
    confidence_level: float
    weight: NDArray[np.float64] | None = None
    n_eff: NDArray[np.float64] | None = None
    interval: IntervalMethod = "wilson"


def _check_interval(interval: str) -> IntervalMethod:
    if interval not in INTERVAL_METHODS:
        raise CalibrationInputError(
            f"interval must be one of {', '.join(INTERVAL_METHODS)}; got {interval!r}."
        )
    return interval


def binned_reliability(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    binning: Binning = "equal_width",
    view: View = "top_label",
    interval: IntervalMethod = "wilson",
    confidence_level: float = 0.95,
    sample_weight: ArrayLike | None = None,
) -> list[BinnedReliability]:
    """Per-bin counts, mean score, observed rate and its interval.

    Parameters
    ----------
    y_true, y_prob, n_bins, binning, view
        As in :func:`calibcore.metrics.expected_calibration_error`.
    interval : {"wilson", "clopper_pearson"}, default="wilson"
        The per-bin interval of the observed frequency: the Wilson (1927) score interval,
        or the exact interval of Clopper & Pearson (1934), Beta(k, n - k + 1) and
        Beta(k + 1, n - k) quantiles, whose coverage is at least the nominal level in
        every bin (wider, most visibly in small bins and near 0 and 1).
    confidence_level : float, default=0.95
    sample_weight : array-like of shape (n,), optional
        Row weights: each bin's mean score and observed rate are weighted means, and
        its interval (either method) is that of a proportion on Kish's effective sample
        size of the bin (Kish 1965), so weights that add up to many rows do not narrow
        it.

    Returns
    -------
    list of BinnedReliability
        One per binary problem of the view (one, or K for the classwise view).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=400)
    >>> y = (rng.uniform(size=400) < p).astype(int)
    >>> (diagram,) = binned_reliability(y, p, n_bins=4, view="positive",
    ...                                 interval="clopper_pearson")
    >>> diagram.interval, diagram.count.tolist()
    ('clopper_pearson', [93, 90, 100, 117])
    >>> bool(np.all(diagram.observed_low <= diagram.observed))
    True
    """
    labels, proba = check_predictions(y_true, y_prob)
    weights = check_sample_weight(sample_weight, labels.size)
    n_bins = check_positive_int(n_bins, "n_bins")
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1, inclusive=False)
    interval = _check_interval(interval)
    problems = score_outcome(labels, proba, view)
    return [
        _one_diagram(scores, outcomes, name, n_bins, binning, interval, level, weights)
        for scores, outcomes, name in zip(
            problems.scores, problems.outcomes, problems.labels, strict=True
        )
    ]


def _one_diagram(
    scores: NDArray[np.float64],
    outcomes: NDArray[np.float64],
    name: str,
    n_bins: int,
    binning: Binning,
    interval: IntervalMethod,
    level: float,
    weights: NDArray[np.float64] | None = None,
) -> BinnedReliability:
    edges = bin_edges(scores, n_bins, binning, weights)
    index = assign_bins(scores, edges)
    size = edges.size - 1
    rows = np.bincount(index, minlength=size)
    if weights is None:
        return diagram_of_sums(name, edges, rows,
                               np.bincount(index, weights=scores, minlength=size),
                               np.bincount(index, weights=outcomes, minlength=size),
                               interval=interval, confidence_level=level)
    return diagram_of_sums(name, edges, rows,
                           np.bincount(index, weights=weights * scores, minlength=size),
                           np.bincount(index, weights=weights * outcomes, minlength=size),
                           interval=interval, confidence_level=level,
                           weight=np.bincount(index, weights=weights, minlength=size),
                           square_weight=np.bincount(index, weights=np.square(weights),
                                                     minlength=size))


def diagram_of_sums(
    label: str,
    edges: NDArray[np.float64],
    count: ArrayLike,
    score_sums: ArrayLike,
    successes: ArrayLike,
    *,
    interval: IntervalMethod = "wilson",
    confidence_level: float = 0.95,
    weight: ArrayLike | None = None,
    square_weight: ArrayLike | None = None,
) -> BinnedReliability:
    """The diagram of bins given by their rows, score sums and outcome sums (which is
    all a diagram needs, so merged per-partition sums give it exactly).

    With row weights, ``score_sums`` and ``successes`` are weighted sums, ``weight`` the
    bins' total weights and ``square_weight`` their sums of squared weights: means are
    weighted, and each interval is a proportion's on the bin's Kish effective size."""
    level, size = confidence_level, edges.size - 1
    rows, hits = np.asarray(count, dtype=np.float64), np.asarray(successes, dtype=np.float64)
    mass = rows if weight is None else np.asarray(weight, dtype=np.float64)
    filled = mass > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = np.where(filled, np.asarray(score_sums, dtype=np.float64) / mass, np.nan)
        observed = np.where(filled, hits / mass, np.nan)
        n_eff = (None if weight is None else
                 np.where(filled, np.square(mass) / np.asarray(square_weight), 0.0))
    low = np.full(size, np.nan)
    high = np.full(size, np.nan)
    if filled.any():
        sizes, successes_of = (rows, hits) if n_eff is None else (n_eff, observed * n_eff)
        low[filled], high[filled] = proportion_interval(
            successes_of[filled], sizes[filled], confidence_level=level, method=interval)
    return BinnedReliability(
        label=label,
        edges=edges,
        count=rows.astype(np.int64),
        mean_score=mean_score,
        observed=observed,
        observed_low=low,
        observed_high=high,
        n=int(rows.sum()),
        confidence_level=level,
        weight=None if weight is None else mass,
        n_eff=n_eff,
        interval=interval,
    )


def with_interval(diagram: BinnedReliability, interval: IntervalMethod) -> BinnedReliability:
    """``diagram`` with its per-bin intervals made by ``interval`` instead (from its
    counts, or Kish effective sizes, and observed rates: all an interval needs), e.g.
    a diagram merged from partition summaries, which carry Wilson's.

    Examples
    --------
    >>> import numpy as np
    >>> (wilson,) = binned_reliability([0, 1, 1, 1], [0.2, 0.6, 0.7, 0.9], n_bins=2,
    ...                                view="positive")
    >>> exact = with_interval(wilson, "clopper_pearson")
    >>> exact.interval, bool(np.all(exact.observed_low <= wilson.observed_low))
    ('clopper_pearson', True)
    """
    interval = _check_interval(interval)
    filled = np.isfinite(diagram.observed)
    sizes = (diagram.count.astype(np.float64) if diagram.n_eff is None
             else np.asarray(diagram.n_eff, dtype=np.float64))
    filled &= sizes > 0
    low = np.full(diagram.observed.size, np.nan)
    high = np.full(diagram.observed.size, np.nan)
    if filled.any():
        low[filled], high[filled] = proportion_interval(
            (diagram.observed * sizes)[filled], sizes[filled],
            confidence_level=diagram.confidence_level, method=interval)
    return replace(diagram, observed_low=low, observed_high=high, interval=interval)


@dataclass(frozen=True)
class SmoothReliability:
    """A smooth reliability diagram of one binary problem (relplot's construction).

    Attributes
    ----------
    label : str
        Which problem ("top label", "class 3", ...).
    grid : ndarray of shape (m,)
        Evaluation points on [0, 1].
    curve : ndarray of shape (m,)
        Kernel-smoothed observed frequency E[outcome | score = t] (reflected
        Gaussian kernel, bandwidth ``bandwidth``).
    curve_low, curve_high : ndarray of shape (m,)
        Pointwise percentile bootstrap band of ``curve`` (bandwidth held fixed).
    density : ndarray of shape (m,)
        Kernel density of the scores (integrates to about 1 over [0, 1]).
    n : int
        Rows.
    bandwidth : float
        Kernel bandwidth sigma: the smooth ECE's fixed point unless given.
    smooth_ece : float
        smooth ECE at ``bandwidth``.
    n_bootstrap : int
    confidence_level : float
    """

    label: str
    grid: NDArray[np.float64]
    curve: NDArray[np.float64]
    curve_low: NDArray[np.float64]
    curve_high: NDArray[np.float64]
    density: NDArray[np.float64]
    n: int
    bandwidth: float
    smooth_ece: float
    n_bootstrap: int
    confidence_level: float


def smooth_reliability(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    view: View = "top_label",
    n_points: int = 200,
    n_bootstrap: int = 200,
    confidence_level: float = 0.95,
    bandwidth: float | None = None,
    random_state: int | np.random.Generator | None = 0,
    sample_weight: ArrayLike | None = None,
) -> list[SmoothReliability]:
    """Kernel-smoothed reliability curve with a bootstrap band and the score density.

    The curve is relplot's kernel regression of the outcome on the score,
    sum_i K(t - v_i) o_i / (sum_i K(t - v_i) + 1e-4), with a Gaussian kernel
    reflected at 0 and 1 (Błasiok & Nakkiran 2023); its bandwidth defaults to
    the fixed point of the smooth ECE (see :func:`calibcore.metrics.smooth_ece`).
    Bootstrap resamples give the pointwise band (drawn per grid cell and
    outcome, so the cost does not grow with n; see ``_bootstrap_curves``).

    Parameters
    ----------
    y_true, y_prob, view
        As in :func:`calibcore.metrics.expected_calibration_error`.
    n_points : int, default=200
        Evaluation points ``linspace(0, 1, n_points)``.
    n_bootstrap : int, default=200
        Resamples of the band; 0 gives a band equal to the curve.
    confidence_level : float, default=0.95
    bandwidth : float, optional
        Kernel bandwidth; the smooth ECE's fixed point if None.
    random_state : int, Generator or None, default=0
        Seed of the resampling.
    sample_weight : array-like of shape (n,), optional
        Row weights: the curve, density and bandwidth are those of the weighted rows
        (equal to the repeated rows for integer weights); the band resamples the rows,
        each carrying its weight.

    Returns
    -------
    list of SmoothReliability
        One per binary problem of the view.
    """
    labels, proba = check_predictions(y_true, y_prob)
    weights = check_sample_weight(sample_weight, labels.size)
    n_points = check_positive_int(n_points, "n_points", minimum=2)
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=0)
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1, inclusive=False)
    if bandwidth is not None:
        bandwidth = check_in_range(bandwidth, "bandwidth", low=0, high=10, inclusive=False)
    grid = np.linspace(0.0, 1.0, n_points)
    rng = np.random.default_rng(random_state)
    return [
        _one_smooth_diagram(problem, grid, bandwidth, n_bootstrap, level, rng, weights)
        for problem in view_problems(labels, proba, view)
    ]


def _bootstrap_curves(
    scores: NDArray[np.float64],
    outcomes: NDArray[np.intp],
    weights: NDArray[np.float64],
    bandwidth: float,
    grid: NDArray[np.float64],
    n_bootstrap: int,
    rng: np.random.Generator,
    sample_weight: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Smoothed curves (n_bootstrap, m) of resamples drawn cell by cell.

    A resample only enters the smoother through the grid sums, so rows (``weights`` of
    them at each score: ones for the data) are grouped into cells (grid interval x
    outcome) and each resample's cell counts are drawn from the multinomial that row
    resampling induces; each cell's rows are split onto the grid with the cell's mean
    share. Cell counts are exact; positions within a cell (a tenth of a bandwidth) are
    averaged. Cost does not grow with the rows. With ``sample_weight`` (row weights of
    the ``weights`` rows), rows are drawn as above and each carries its cell's mean
    weight.
    """
    n_grid = grid_size(bandwidth)
    position = scores * (n_grid - 1)
    left = np.clip(position.astype(np.intp), 0, n_grid - 2)
    cells = 2 * left + outcomes
    counts = np.bincount(cells, weights=weights, minlength=2 * (n_grid - 1))
    mass = weights if sample_weight is None else weights * sample_weight
    cell_mass = np.bincount(cells, weights=mass, minlength=counts.size)
    shares = np.bincount(cells, weights=mass * (position - left), minlength=counts.size)
    right_share = np.divide(shares, cell_mass, out=np.zeros_like(shares), where=cell_mass > 0)
    total = round(float(weights.sum()))
    # Only cells holding rows draw any, and the last cell takes what rounding leaves:
    # numpy's multinomial skips a zero-probability cell without drawing, so the draws
    # of these cells alone are those of all cells, bit for bit, with far fewer cells
    # (a class's probabilities fill a few hundred of the grid's thousands).
    filled = np.union1d(np.flatnonzero(counts > 0), [counts.size - 1])
    draws = rng.multinomial(total, (counts / counts.sum())[filled],
                            size=n_bootstrap).astype(np.float64)
    if sample_weight is not None:  # a drawn row carries its cell's mean weight
        draws *= np.divide(cell_mass, counts, out=np.zeros_like(counts),
                           where=counts > 0)[filled]
    # a cell of outcome o at interval j sends its draws to grid points j and j + 1
    sums = np.zeros((2 * n_bootstrap, n_grid))  # rows: positives, then all rows
    right = draws * right_share[filled]
    left_part = draws * (1.0 - right_share[filled])
    positive, interval = filled % 2 == 1, filled // 2
    left_total, right_total = np.zeros((2, n_bootstrap, n_grid - 1))
    for outcome in (positive, ~positive):  # at most one cell per interval and outcome
        left_total[:, interval[outcome]] += left_part[:, outcome]
        right_total[:, interval[outcome]] += right[:, outcome]
    sums[:n_bootstrap, interval[positive]] += left_part[:, positive]
    sums[:n_bootstrap, interval[positive] + 1] += right[:, positive]
    sums[n_bootstrap:, :-1] += left_total
    sums[n_bootstrap:, 1:] += right_total
    smoothed = interpolate(reflected_gaussian_convolve(sums, bandwidth), grid)
    return np.clip(smoothed[:n_bootstrap] / (smoothed[n_bootstrap:] + DENSITY_EPS), 0.0, 1.0)


def smooth_reliability_of_groups(
    scores: ArrayLike,
    outcome_rates: ArrayLike,
    counts: ArrayLike,
    *,
    label: str = "top label",
    n_points: int = 200,
    n_bootstrap: int = 200,
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
    sample_weight: ArrayLike | None = None,
) -> SmoothReliability:
    """The smooth reliability diagram of rows given as groups (e.g. the resampling cells of
    :class:`calibcore.partitioned.CellSummary`): ``counts[i]`` rows at score ``scores[i]``,
    a fraction ``outcome_rates[i]`` of them with outcome 1.

    Equal to :func:`smooth_reliability` on the rows when each group's rows share its
    score; otherwise every row is moved to its group's mean score (within 1/8,190 for
    resampling cells), which moves the curve by far less than the band (the tests hold
    it within :data:`calibcore.partitioned.CELL_ERROR_BOUND`). The band resamples rows, as
    :func:`smooth_reliability`'s does.

    With ``sample_weight`` (each group's mean row weight), ``outcome_rates`` are the
    groups' weighted rates and every row carries its group's mean weight: the curve is
    :func:`smooth_reliability`'s with those row weights, and the band resamples rows,
    each carrying its weight.
    """
    scores = np.asarray(scores, dtype=np.float64)
    rates = np.asarray(outcome_rates, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if not (scores.ndim == rates.ndim == counts.ndim == 1
            and scores.size == rates.size == counts.size) or scores.size == 0:
        raise CalibrationInputError("scores, outcome_rates and counts must be 1-D arrays of "
                                    "the same non-zero length.")
    if not (np.all((scores >= 0) & (scores <= 1)) and np.all((rates >= 0) & (rates <= 1))
            and np.all(counts > 0)):
        raise CalibrationInputError("scores and outcome_rates must lie in [0, 1] and counts "
                                    "be positive.")
    n_points = check_positive_int(n_points, "n_points", minimum=2)
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=0)
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1, inclusive=False)
    order = np.argsort(scores, kind="stable")
    # each group as its outcome-1 and outcome-0 rows
    both = np.concatenate([order, order])
    outcomes = np.repeat(np.array([1, 0], dtype=np.intp), order.size)
    weights = np.concatenate([counts[order] * rates[order], counts[order] * (1 - rates[order])])
    unit = None
    if sample_weight is not None:
        unit = np.asarray(sample_weight, dtype=np.float64)
        if unit.shape != counts.shape or not np.all(np.isfinite(unit) & (unit >= 0)):
            raise CalibrationInputError("sample_weight must hold a non-negative weight per "
                                        "group.")
        unit = np.concatenate([unit[order], unit[order]])
    keep = weights > 0
    position = np.argsort(scores[both][keep], kind="stable")
    return _weighted_smooth_diagram(
        label, scores[both][keep][position], outcomes[keep][position],
        weights[keep][position], np.linspace(0.0, 1.0, n_points), None, n_bootstrap, level,
        np.random.default_rng(random_state),
        None if unit is None else unit[keep][position])


def _one_smooth_diagram(
    problem: ViewProblem,
    grid: NDArray[np.float64],
    bandwidth: float | None,
    n_bootstrap: int,
    level: float,
    rng: np.random.Generator,
    sample_weight: NDArray[np.float64] | None = None,
) -> SmoothReliability:
    outcomes = np.rint(problem.scores - problem.residuals).astype(np.intp)
    if sample_weight is not None:
        return _weighted_smooth_diagram(
            problem.label, problem.scores, outcomes, np.ones(problem.scores.size), grid,
            bandwidth, n_bootstrap, level, rng, sample_weight[problem.order]
            if problem.order is not None else sample_weight)
    return _weighted_smooth_diagram(problem.label, problem.scores, outcomes,
                                    np.ones(problem.scores.size), grid, bandwidth,
                                    n_bootstrap, level, rng)


def _weighted_smooth_diagram(
    label: str,
    scores: NDArray[np.float64],
    outcomes: NDArray[np.intp],
    weights: NDArray[np.float64],
    grid: NDArray[np.float64],
    bandwidth: float | None,
    n_bootstrap: int,
    level: float,
    rng: np.random.Generator,
    sample_weight: NDArray[np.float64] | None = None,
) -> SmoothReliability:
    """The diagram of ``weights`` rows at each (sorted) score with outcome 0 or 1, each
    row weighted by ``sample_weight`` when given."""
    n_rows = float(weights.sum())
    row_weights = (weights if sample_weight is None else weights * sample_weight)[None, :]
    total = float(row_weights.sum())
    values, bandwidths = smooth_ece_rows(scores, scores - outcomes, row_weights, bandwidth)
    sigma = float(bandwidths[0])
    smoothed, density = KernelSmoother(scores, row_weights * outcomes, row_weights).smooth(
        sigma, grid)
    # Clipping only removes transform rounding (~1e-12) around empty regions.
    curve = np.clip(smoothed[0] / (density[0] + DENSITY_EPS), 0.0, 1.0)
    low, high = curve, curve
    if n_bootstrap:
        curves = _bootstrap_curves(scores, outcomes, weights, sigma, grid, n_bootstrap, rng,
                                   sample_weight)
        low, high = np.quantile(curves, [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=0)
    return SmoothReliability(
        label=label,
        grid=grid,
        curve=curve,
        curve_low=low,
        curve_high=high,
        density=np.maximum(density[0], 0.0) / total,
        n=round(n_rows),
        bandwidth=sigma,
        smooth_ece=float(values[0]),
        n_bootstrap=n_bootstrap,
        confidence_level=level,
    )
