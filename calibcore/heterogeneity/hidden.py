"""Hidden heterogeneity (HH) and the choice between local and global calibration.

Wagstaff & Dietterich 2023, "Hidden Heterogeneity: When to Choose Similarity-Based
Calibration", Algorithm 1 and eqs. 1-4, as the paper's reference code computes it:

1. the neighbourhood U_t of a test row is the calibration rows whose
   probabilities lie within Hellinger distance ``radius`` of p_t, inclusive
   (a k-d tree on sqrt(p), radius * sqrt(2), eq. 2);
2. on U_t, bagged full-feature trees (100, Gini, fully grown, OOB scored) are
   fitted for each ccp_alpha in linspace(0, 0.03, 7); the alpha with strictly
   best OOB accuracy is kept;
3. HH_t = max(0, Brier(p on U_t) - Brier(forest on U_t)), Brier summed over
   classes (eq. 3-4); empty or single-class neighbourhoods give 0.

Row weights w_i of the calibration rows (``sample_weight``) enter where the rows stand
for a population, not where they are geometry: the neighbourhood U_t stays the
calibration rows within the radius; each local forest is grown as
``RandomForestClassifier.fit(..., sample_weight=w)`` grows it in scikit-learn 1.9 (each
tree's bootstrap sample draws |U_t| rows with probability proportional to w); the OOB
accuracy that picks the alpha and both Brier scores of eq. 3-4 are weighted means over
U_t, sum_i w_i b_i / sum_i w_i. What is exact: rows of weight 0 are dropped before
anything else, so they give what leaving them out gives, bit for bit; weights all 1 (after
that) are no weights, bit for bit. What is approximate: given the forest, integer
weights give the Brier scores and OOB accuracy of the rows repeated by their weights
(up to rounding), but not the forest: its bootstrap draws |U_t| rows where the
repeated rows would draw sum(w) rows uniformly, and the copies of a repeated row fall in
and out of bag separately, so the repeated rows' forest fits them more tightly in
sample. HH of repeated rows is therefore larger, not just noisier (default_nb with
weights 1-3: mean HH 0.011 weighted, 0.035 on the repeated rows, 0.011 unweighted).

Rows with identical neighbourhoods (as sets, exactly) share one computation;
distinct neighbourhoods are computed in parallel threads. The rows of a
neighbourhood are ordered as the reference's ``NearestNeighbors`` returns them,
so bootstrap samples, forests and HH values equal the reference's.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import ArrayLike, NDArray

from calibcore._progress import Heartbeat
from calibcore._validation import (
    check_in_range,
    check_labels,
    check_positive_int,
    check_probabilities,
    describe_rows,
    first_rows,
)
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError
from calibcore.heterogeneity._bagging import TreeSeeds
from calibcore.heterogeneity._forest_scores import score_forests
from calibcore.heterogeneity.neighbourhoods import hellinger_neighbourhoods, neighbour_counts

__all__ = [
    "AUTO_EXACT_ROWS",
    "AUTO_GRID_PER_RADIUS",
    "CCP_ALPHAS",
    "MAX_NEIGHBOUR_PAIRS",
    "CalibrationRecommendation",
    "HiddenHeterogeneity",
    "NeighbourhoodCache",
    "ProgressCallback",
    "check_calibration_rows",
    "check_features",
    "hidden_heterogeneity",
    "hidden_heterogeneity_details",
    "recommend_calibration",
]

#: The pruning grid of the reference: linspace(0, 0.03, 7).
CCP_ALPHAS = np.linspace(0.0, 0.03, 7)
N_TREES = 100
#: Neighbourhood rows per parallel task (a task grows 100 trees per neighbourhood).
_ROWS_PER_TASK = 2_000
#: ``grid="auto"`` fits exactly up to this many neighbourhood rows in all (summed over
#: the distinct neighbourhoods to fit): every test row of default_nb is 1.3M rows (12 s
#: on two cores); 3,000 rows against 20,000 calibration rows would be 19M (many minutes).
AUTO_EXACT_ROWS = 2_000_000
#: The grid ``"auto"`` uses above that, as a fraction of the radius.
AUTO_GRID_PER_RADIUS = 0.1
#: Most (row, neighbour) pairs the neighbourhood search lists at once (8 bytes each, a
#: few copies while sorting): every test row of a 300k-row file against 20,000
#: calibration rows would be 960M. ``"auto"`` shares forests above it; exact refuses.
MAX_NEIGHBOUR_PAIRS = 50_000_000

ProgressCallback = Callable[[int, int], None]
#: Results of one local forest by neighbourhood (valid for one set of calibration rows).
NeighbourhoodCache = dict[bytes, tuple[float, ...]]
_PARTS = ("hh", "ccp_alpha", "oob_accuracy", "brier_original", "brier_local")


@dataclass(frozen=True)
class HiddenHeterogeneity:
    """Per-row hidden heterogeneity and what it was computed from.

    Attributes
    ----------
    values : ndarray of shape (n,)
        HH_t in [0, 2].
    n_neighbours : ndarray of shape (n,)
        |U_t|, the sample size behind each value (calibration rows of positive weight).
    neighbourhood : ndarray of shape (n,)
        Id of the distinct neighbourhood of each row (rows sharing an id share
        their value).
    ccp_alpha : ndarray of shape (n,)
        Pruning parameter kept; NaN where no forest was fitted or none had a
        positive OOB accuracy.
    oob_accuracy : ndarray of shape (n,)
        OOB accuracy of the kept forest (NaN as above); weighted with row weights.
    brier_original, brier_local : ndarray of shape (n,)
        Brier score (summed over classes) of the given probabilities and of the
        local forest on U_t (weighted means with row weights); NaN where there was
        nothing to compare.
    radius : float
    n_calibration : int
        Calibration rows used (those of positive weight).
    n_forests : int
        Distinct neighbourhoods for which forests were fitted.
    grid : float or None
        The grid the neighbourhood centres were rounded to (None: exact).
    """

    values: NDArray[np.float64]
    n_neighbours: NDArray[np.int64]
    neighbourhood: NDArray[np.int64]
    ccp_alpha: NDArray[np.float64]
    oob_accuracy: NDArray[np.float64]
    brier_original: NDArray[np.float64]
    brier_local: NDArray[np.float64]
    radius: float
    n_calibration: int
    n_forests: int
    grid: float | None = None
    weighted: bool = False

    @property
    def mean(self) -> float:
        """Mean HH over the rows (the paper's data-set level summary)."""
        return float(np.mean(self.values))


@dataclass(frozen=True)
class CalibrationRecommendation:
    """Local or global calibration, from mean HH and calibration-set size.

    The rule of thumb of Wagstaff & Dietterich 2023, §5.3 and §6.

    Attributes
    ----------
    recommend : {"local", "global"}
    mean_hh : float
    n_rows : int
        Rows the mean is taken over.
    n_calibration : int
    hh_threshold : float
        Mean HH above which local calibration is worth its variance.
    min_calibration_rows : int
        Calibration rows below which local methods did not pay off in the paper.
    reason : str
        One sentence with the numbers behind the advice.
    """

    recommend: Literal["local", "global"]
    mean_hh: float
    n_rows: int
    n_calibration: int
    hh_threshold: float
    min_calibration_rows: int
    reason: str


def hidden_heterogeneity(
    X_cal: ArrayLike,
    y_cal: ArrayLike,
    p_cal: ArrayLike,
    p_test: ArrayLike,
    *,
    radius: float = 0.1,
    random_state: int = 0,
    n_jobs: int | None = -1,
    progress: ProgressCallback | None = None,
    sample_weight: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Hidden heterogeneity of each test row (Wagstaff & Dietterich 2023, Algorithm 1, eq. 3).

    Parameters
    ----------
    X_cal : array-like of shape (n_cal, d)
        Features of the calibration rows (numeric, complete).
    y_cal : array-like of shape (n_cal,)
        Class indices 0..K-1 of the calibration rows.
    p_cal : array-like of shape (n_cal,) or (n_cal, K)
        The classifier's probabilities on the calibration rows.
    p_test : array-like of shape (n,) or (n, K)
        The classifier's probabilities on the rows to score.
    radius : float, default=0.1
        Hellinger radius of the probability neighbourhood, in [0, 1].
    random_state : int, default=0
        Seed of the bagged trees (the same seed for every neighbourhood, as the
        reference).
    n_jobs : int or None, default=-1
        Threads over distinct neighbourhoods; results do not depend on it.
    progress : callable, optional
        Called as ``progress(done, total)`` with counts of local forests: first
        with ``done = 0``, then after each parallel task; and in between at most
        every 0.25 s (with ``(0, 0)`` while the neighbourhoods are found, then from
        the worker threads between trees, with the last counts). An exception
        raised by it cancels the remaining work and propagates.
    sample_weight : array-like of shape (n_cal,), optional
        Non-negative weights of the calibration rows (not all zero): the local forests
        are grown with them and the OOB accuracy and Brier scores are weighted means;
        the neighbourhoods stay geometric. Rows of weight 0 are left out exactly,
        weights all 1 are no weights exactly; integer weights match repeated rows
        only approximately (see the module docstring).

    Returns
    -------
    ndarray of shape (n,)
        HH_t = max(0, Brier(p on U_t) - Brier(local forest on U_t)).
    """
    return hidden_heterogeneity_details(
        X_cal, y_cal, p_cal, p_test, radius=radius, random_state=random_state,
        n_jobs=n_jobs, progress=progress, sample_weight=sample_weight,
    ).values


def hidden_heterogeneity_details(
    X_cal: ArrayLike,
    y_cal: ArrayLike,
    p_cal: ArrayLike,
    p_test: ArrayLike,
    *,
    radius: float = 0.1,
    random_state: int = 0,
    n_jobs: int | None = -1,
    progress: ProgressCallback | None = None,
    cache: NeighbourhoodCache | None = None,
    grid: float | Literal["auto"] | None = None,
    sample_weight: ArrayLike | None = None,
) -> HiddenHeterogeneity:
    """:func:`hidden_heterogeneity` with neighbourhood sizes, chosen alphas and Brier scores.

    ``cache`` (a dict, initially empty) keeps each local forest's results by its
    neighbourhood's rows and seed: a later call with the same calibration rows
    reuses them instead of refitting (SWC-HH scores test and calibration rows,
    whose neighbourhoods are largely the same sets). Progress counts the forests
    still to fit.

    ``grid`` (None: exact; else in [1e-6, 1]) shares forests between rows whose
    neighbourhoods nearly coincide: each row's neighbourhood is centred on its
    sqrt-probabilities rounded
    to multiples of ``grid`` (at most ``grid * sqrt(K / 8)`` from its own point in
    Hellinger distance), so rows rounding to the same point share one forest.
    ``"auto"`` is exact unless the distinct neighbourhoods hold more than
    :data:`AUTO_EXACT_ROWS` rows in all; then the grid is ``radius / 10`` (centres
    moved by at most 5% of the radius for two classes).

    ``sample_weight`` as in :func:`hidden_heterogeneity`.
    """
    features, labels, proba_cal = check_calibration_rows(X_cal, y_cal, p_cal)
    weights = check_sample_weight(sample_weight, labels.size)
    if weights is not None:
        present = np.flatnonzero(weights > 0)
        if present.size < labels.size:  # weight 0: the row stands for nobody
            features, labels, proba_cal = features[present], labels[present], proba_cal[present]
            weights = weights[present]
        if bool(np.all(weights == 1.0)):
            weights = None  # weights 0 and 1 only: the rows of weight 1, unweighted
    proba_test = check_probabilities(p_test, name="p_test")
    if proba_test.shape[1] != proba_cal.shape[1]:
        raise CalibrationInputError(
            f"p_test has {proba_test.shape[1]} classes but p_cal has {proba_cal.shape[1]}."
        )
    radius = check_in_range(radius, "radius", low=0.0, high=1.0)
    random_state = check_positive_int(random_state, "random_state", minimum=0)

    heartbeat = Heartbeat(progress, 0, 0)
    grid, members, groups = _neighbourhoods(proba_cal, proba_test, radius, grid, heartbeat)
    n_groups = len(members)
    sizes = np.array([rows.size for rows in members], dtype=np.int64)
    fitted = np.flatnonzero([np.unique(labels[rows]).size > 1 for rows in members])
    columns = {name: np.full(n_groups, np.nan) for name in _PARTS}
    columns["hh"][:] = 0.0
    n_forests = int(fitted.size)
    keys: dict[int, bytes] = {}
    if cache is not None:
        keys = {int(group): _cache_key(members[group], random_state, weights)
                for group in fitted}
        for group, key in keys.items():
            for name, value in zip(_PARTS, cache.get(key, ()), strict=False):
                columns[name][group] = value
        fitted = np.array([group for group, key in keys.items() if key not in cache],
                          dtype=np.intp)
    seeds = TreeSeeds.draw(random_state, N_TREES, n_raw=2 * int(sizes.max(initial=1)) + 256)
    tasks = _balanced_tasks(fitted, sizes)
    runner = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")
    outputs = runner(
        delayed(_score_neighbourhoods)(
            features, labels, proba_cal, [members[group] for group in task], seeds, heartbeat,
            weights,
        )
        for task in tasks
    )
    with warnings.catch_warnings():
        # A progress callback may raise to cancel; joblib then warns that it dropped
        # the queued tasks, which is the point.
        warnings.filterwarnings("ignore", message=".*still being processed by the workers",
                                category=UserWarning)
        try:
            done = 0
            heartbeat.now(done, len(fitted))
            for task, output in zip(tasks, outputs, strict=True):
                for name, values in output.items():
                    columns[name][task] = values
                if cache is not None:
                    for group in task:
                        cache[keys[int(group)]] = tuple(float(columns[name][group])
                                                   for name in _PARTS)
                done += len(task)
                heartbeat.now(done, len(fitted))
        finally:
            outputs.close()
    single_class = (sizes > 0) & np.isnan(columns["brier_original"])
    columns["brier_original"][single_class] = [
        _brier(proba_cal[members[g]], labels[members[g]],
               None if weights is None else weights[members[g]])
        for g in np.flatnonzero(single_class)
    ]
    return HiddenHeterogeneity(
        values=columns["hh"][groups],
        n_neighbours=sizes[groups],
        neighbourhood=groups.astype(np.int64),
        ccp_alpha=columns["ccp_alpha"][groups],
        oob_accuracy=columns["oob_accuracy"][groups],
        brier_original=columns["brier_original"][groups],
        brier_local=columns["brier_local"][groups],
        radius=radius,
        n_calibration=int(labels.size),
        n_forests=n_forests,
        grid=grid,
        weighted=weights is not None,
    )


def _neighbourhoods(
    proba_cal: NDArray[np.float64], proba_test: NDArray[np.float64], radius: float,
    grid: float | Literal["auto"] | None, heartbeat: Heartbeat,
) -> tuple[float | None, list[NDArray[np.intp]], NDArray[np.intp]]:
    """The grid used, the distinct neighbourhoods and the neighbourhood of each test row."""
    shared = max(AUTO_GRID_PER_RADIUS * radius, 1e-6)
    if grid == "auto":
        counts = neighbour_counts(proba_cal, proba_test, radius)
        # Neighbourhoods of different sizes are different sets, so the distinct sizes sum
        # to at most the rows of the distinct neighbourhoods: above the budget, the exact
        # listing (seconds for thousands of rows) would only be thrown away.
        if (int(counts.sum()) > MAX_NEIGHBOUR_PAIRS
                or int(np.unique(counts).sum()) > AUTO_EXACT_ROWS):
            grid = shared
    if grid != "auto":
        centres, rows_of_centre = _grid_centres(proba_test, grid)
        pairs = _pairs(proba_cal, centres, radius)
        if pairs > MAX_NEIGHBOUR_PAIRS:
            way_out = (f"share forests (a grid step such as {shared:g}), evaluate fewer "
                       "rows or use fewer calibration rows" if grid is None else
                       "evaluate fewer rows, use fewer calibration rows or a coarser grid")
            raise CalibrationInputError(
                f"the neighbourhoods of these {proba_test.shape[0]:,} rows hold {pairs:,} "
                f"calibration rows in all, too many to list at once (at most "
                f"{MAX_NEIGHBOUR_PAIRS:,}): {way_out}.", code="too_many_neighbours")
        members, groups = hellinger_neighbourhoods(proba_cal, centres, radius, heartbeat)
        return grid, members, groups[rows_of_centre]
    members, groups = hellinger_neighbourhoods(proba_cal, proba_test, radius, heartbeat)
    if sum(rows.size for rows in members) <= AUTO_EXACT_ROWS:
        return None, members, groups
    return _neighbourhoods(proba_cal, proba_test, radius, shared, heartbeat)


def _pairs(proba_cal: NDArray[np.float64], centres: NDArray[np.float64], radius: float) -> int:
    """(centre, calibration row) pairs within the radius: what the search would list."""
    return int(neighbour_counts(proba_cal, centres, radius).sum())


def _grid_centres(
    proba: NDArray[np.float64], grid: float | None
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Neighbourhood centres (as probabilities whose square roots are the centres) and
    the centre of each row: the rows themselves, or their distinct rounded points."""
    if grid is None:
        return proba, np.arange(proba.shape[0])
    grid = check_in_range(grid, "grid", low=1e-6, high=1.0)
    points, rows_of_centre = np.unique(np.round(np.sqrt(proba) / grid) * grid, axis=0,
                                       return_inverse=True)
    return np.square(points), rows_of_centre.ravel().astype(np.intp)


def recommend_calibration(
    hh: ArrayLike,
    n_calibration: int,
    *,
    hh_threshold: float = 0.03,
    min_calibration_rows: int = 500,
    sample_weight: ArrayLike | None = None,
) -> CalibrationRecommendation:
    """Whether a local (similarity-based) calibrator is likely to beat a global one.

    The paper's guidance (§5.2-5.4, §6): local calibration's Brier improvement
    grows with mean HH; at very low HH (0.01-0.03 for the CIFAR networks) global
    methods were best; and local methods needed about 500 calibration rows
    before they beat global ones. Both conditions must hold to recommend
    "local".

    Parameters
    ----------
    hh : array-like of shape (n,)
        Per-row HH (e.g. :func:`hidden_heterogeneity` on held-out rows).
    n_calibration : int
        Calibration rows available to the calibrator.
    hh_threshold : float, default=0.03
    min_calibration_rows : int, default=500
    sample_weight : array-like of shape (n,), optional
        Weights of the rows of ``hh``: the mean HH is then their weighted mean.
    """
    values = np.asarray(hh, dtype=np.float64)
    if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all():
        raise CalibrationInputError("hh must be a non-empty 1-D array of finite HH values.")
    n_calibration = check_positive_int(n_calibration, "n_calibration", minimum=0)
    weights = check_sample_weight(sample_weight, values.size)
    mean_hh = float(values.mean() if weights is None else np.average(values, weights=weights))
    numbers = (f"mean HH {mean_hh:.3f} over {values.size} rows (threshold {hh_threshold:g}), "
               f"{n_calibration} calibration rows (minimum {min_calibration_rows})")
    recommend: Literal["local", "global"]
    if mean_hh <= hh_threshold:
        recommend, why = "global", "hidden heterogeneity is low, so a global map loses little"
    elif n_calibration < min_calibration_rows:
        recommend, why = "global", "too few calibration rows for a local method to pay off"
    else:
        recommend, why = "local", "high hidden heterogeneity and enough calibration data"
    return CalibrationRecommendation(
        recommend=recommend, mean_hh=mean_hh, n_rows=int(values.size),
        n_calibration=n_calibration, hh_threshold=float(hh_threshold),
        min_calibration_rows=int(min_calibration_rows), reason=f"{why}: {numbers}.",
    )


def check_calibration_rows(
    X_cal: ArrayLike, y_cal: ArrayLike, p_cal: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.float64]]:
    """Validate calibration features, labels and probabilities together."""
    proba = check_probabilities(p_cal, name="p_cal")
    labels = check_labels(y_cal, proba.shape[1], n_rows=proba.shape[0], name="y_cal")
    features = check_features(X_cal, proba.shape[0], name="X_cal")
    return features, labels, proba


def check_features(
    X: ArrayLike | None, n_rows: int, *, name: str = "features"
) -> NDArray[np.float64]:
    """Numeric, complete features of shape (n_rows, d); 1-D input is one feature."""
    if X is None:
        raise CalibrationInputError(f"{name} are required: pass an (n, d) numeric array.")
    try:
        features = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(
            f"{name} must be numeric (encode categorical columns first): {exc}"
        ) from exc
    if features.ndim == 1:
        features = features[:, None]
    if features.ndim != 2 or features.shape[0] != n_rows or features.shape[1] == 0:
        raise CalibrationInputError(
            f"{name} must have shape ({n_rows}, d) with d >= 1; got {features.shape}."
        )
    bad = ~np.isfinite(features).all(axis=1)
    if bad.any():
        raise CalibrationInputError(
            f"{name} has missing or non-finite values in {describe_rows(bad)}; "
            "the forests need complete features: impute or drop those rows.",
            code="non_finite_feature",
            rows=first_rows(bad),
            count=int(bad.sum()),
        )
    return features


def _cache_key(rows: NDArray[np.intp], random_state: int,
               weights: NDArray[np.float64] | None = None) -> bytes:
    """The neighbourhood's rows in order (they fix the bootstrap draws), the seed and (when
    weighted) the rows' weights, hashed."""
    digest = hashlib.sha256(np.ascontiguousarray(rows, dtype=np.int64).tobytes())
    digest.update(str(random_state).encode())
    if weights is not None:
        digest.update(b"weights")
        digest.update(np.ascontiguousarray(weights[rows], dtype=np.float64).tobytes())
    return digest.digest()


def _balanced_tasks(fitted: NDArray[np.intp], sizes: NDArray[np.int64]) -> list[NDArray[np.intp]]:
    """Split the neighbourhoods to fit into tasks of about ``_ROWS_PER_TASK`` rows."""
    if fitted.size == 0:
        return []
    order = fitted[np.argsort(-sizes[fitted], kind="stable")]
    n_tasks = max(1, int(np.ceil(sizes[fitted].sum() / _ROWS_PER_TASK)))
    n_tasks = min(n_tasks, order.size)
    return [order[task::n_tasks] for task in range(n_tasks)]


def _score_neighbourhoods(
    features: NDArray[np.float64],
    labels: NDArray[np.intp],
    proba_cal: NDArray[np.float64],
    members: list[NDArray[np.intp]],
    seeds: TreeSeeds,
    heartbeat: Heartbeat,
    weights: NDArray[np.float64] | None = None,
) -> dict[str, NDArray[np.float64]]:
    """HH and its parts for several neighbourhoods (one parallel task)."""
    out = {name: np.empty(len(members)) for name in
           ("hh", "ccp_alpha", "oob_accuracy", "brier_original", "brier_local")}
    for position, rows in enumerate(members):
        heartbeat()
        present, classes = np.unique(labels[rows], return_inverse=True)
        row_weights = None if weights is None else weights[rows]
        forests = score_forests(features[rows], classes.ravel(), present.size, seeds, CCP_ALPHAS,
                                heartbeat, row_weights)
        best = int(np.argmax(forests.oob_correct))  # the first best: only strictly better wins
        brier_original = _brier(proba_cal[rows], labels[rows], row_weights)
        out["brier_original"][position] = brier_original
        if forests.oob_correct[best] == 0:  # the reference keeps no forest: HH = 0
            out["hh"][position] = 0.0
            out["ccp_alpha"][position] = out["oob_accuracy"][position] = np.nan
            out["brier_local"][position] = np.nan
            continue
        local = np.zeros_like(proba_cal[rows])
        local[:, present] = forests.in_sample[best]
        brier_local = _brier(local, labels[rows], row_weights)
        out["hh"][position] = max(brier_original - brier_local, 0.0)
        out["ccp_alpha"][position] = CCP_ALPHAS[best]
        out["oob_accuracy"][position] = forests.oob_correct[best] / (
            rows.size if row_weights is None else np.sum(row_weights))
        out["brier_local"][position] = brier_local
    return out


def _brier(proba: NDArray[np.float64], labels: NDArray[np.intp],
           weights: NDArray[np.float64] | None = None) -> float:
    """Brier score summed over classes, mean over rows (eq. 4), summed as the reference;
    with ``weights``, the weighted mean over rows."""
    squared = proba**2
    rows = np.arange(labels.size)
    squared[rows, labels] = (1.0 - proba[rows, labels]) ** 2
    if weights is None:
        return float(np.sum(squared)) / labels.size
    return float(weights @ squared.sum(axis=1)) / float(np.sum(weights))
