"""Validation and the exact/sampled LCE computation behind :mod:`calibcore.local`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import (
    check_positive_int,
    check_predictions,
    describe_rows,
    first_rows,
)
from calibcore.data.views import top_label
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError
from calibcore.local._laplace_sums import SWEEP_MAX_DIMENSION, kernel_sums
from calibcore.metrics.binning import assign_bins, equal_width_edges

#: ``progress(fraction, message)`` with a fraction in [0, 1].
Progress = Callable[[float, str], None]
APPROXIMATIONS = ("auto", "exact", "sampled")
#: ``approximation="auto"`` is exact up to this many rows in any dimension.
EXACT_ROW_LIMIT = 100_000


@dataclass(frozen=True, eq=False)
class Prepared:
    """Validated inputs of an LCE computation: centred phi, top-label view, bins, and the
    row weights (None: every row counts once)."""

    coordinates: NDArray[np.float64]
    confidence: NDArray[np.float64]
    correct: NDArray[np.float64]
    bin_index: NDArray[np.intp]
    edges: NDArray[np.float64]
    exact: bool
    n_sources: int
    random_state: int
    weights: NDArray[np.float64] | None = None


def prepare(
    embedding: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    n_bins: int,
    approximation: str,
    n_sources: int,
    random_state: int,
    sample_weight: ArrayLike | None = None,
) -> Prepared:
    """Validate once at the public boundary (see :func:`calibcore.local.local_calibration`)."""
    labels, proba = check_predictions(y_true, y_prob)
    n_bins = check_positive_int(n_bins, "n_bins")
    n_sources = check_positive_int(n_sources, "n_sources", minimum=2)
    if approximation not in APPROXIMATIONS:
        raise CalibrationInputError(
            f"approximation must be one of {', '.join(APPROXIMATIONS)}; got {approximation!r}."
        )
    coordinates = check_embedding(embedding, labels.size)
    weights = check_sample_weight(sample_weight, labels.size)
    problem = top_label(labels, proba)
    confidence, correct = problem.scores[0], problem.outcomes[0]
    edges = equal_width_edges(n_bins)
    sampled = approximation == "sampled" or (
        approximation == "auto"
        and coordinates.shape[1] > SWEEP_MAX_DIMENSION
        and coordinates.shape[0] > EXACT_ROW_LIMIT
    )
    return Prepared(
        # Centering changes no distance but keeps the scaled coordinates small.
        coordinates=coordinates - coordinates.mean(axis=0),
        confidence=confidence, correct=correct, bin_index=assign_bins(confidence, edges),
        edges=edges, exact=not sampled, n_sources=n_sources, random_state=random_state,
        weights=weights,
    )


def check_embedding(embedding: ArrayLike, n_rows: int) -> NDArray[np.float64]:
    """Validate phi(x) as a finite (n, d) float array (1-D input is one coordinate)."""
    try:
        coordinates = np.asarray(embedding, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"embedding must be numeric: {exc}") from exc
    if coordinates.ndim == 1:
        coordinates = coordinates[:, None]
    if coordinates.ndim != 2 or coordinates.shape[1] == 0:
        raise CalibrationInputError(
            f"embedding must have shape (n, d) with d >= 1; got {np.shape(embedding)}."
        )
    if coordinates.shape[0] != n_rows:
        raise CalibrationInputError(
            f"embedding has {coordinates.shape[0]} rows but the predictions have {n_rows}."
        )
    bad = ~np.isfinite(coordinates).all(axis=1)
    if bad.any():
        raise CalibrationInputError(
            f"embedding has missing or non-finite coordinates in {describe_rows(bad)}.",
            code="non_finite_embedding", rows=first_rows(bad), count=int(bad.sum()),
        )
    return coordinates


def check_gamma(gamma: float) -> float:
    try:
        value = float(gamma)
    except (TypeError, ValueError):
        raise CalibrationInputError(f"gamma must be a positive number; got {gamma!r}.") from None
    if not np.isfinite(value) or value <= 0.0:
        raise CalibrationInputError(f"gamma must be a positive finite number; got {gamma!r}.")
    return value


def bin_mass(prepared: Prepared) -> NDArray[np.float64]:
    """Rows per bin, or the sum of their weights."""
    size = prepared.edges.size - 1
    if prepared.weights is None:
        return np.bincount(prepared.bin_index, minlength=size).astype(float)
    return np.asarray(np.bincount(prepared.bin_index, weights=prepared.weights,
                                  minlength=size), dtype=np.float64)


def bin_gaps(prepared: Prepared) -> NDArray[np.float64]:
    """Signed conf_b - acc_b per bin, weighted means with row weights (NaN for empty bins
    and bins of zero weight)."""
    size = prepared.edges.size - 1
    counts = bin_mass(prepared)
    residual = prepared.confidence - prepared.correct
    if prepared.weights is not None:
        residual = prepared.weights * residual
    totals = np.bincount(prepared.bin_index, weights=residual, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, totals / counts, np.nan)


def signed_lce_curve(
    prepared: Prepared, gammas: NDArray[np.float64], progress: Progress | None
) -> NDArray[np.float64]:
    """Signed LCE for each bandwidth, shape (len(gammas), n).

    With row weights w the source weights are (w (conf - correct), w): the weighted
    Nadaraya-Watson mean. A row of weight 0 adds nothing to any sum; its own value is the
    mean of its bin's weighted rows around it (NaN where they weigh nothing).
    """
    coordinates = prepared.coordinates
    dimension = coordinates.shape[1]
    if prepared.weights is None:
        weights = np.column_stack([prepared.confidence - prepared.correct,
                                   np.ones(coordinates.shape[0])])
    else:
        weights = np.column_stack([prepared.weights * (prepared.confidence - prepared.correct),
                                   prepared.weights])
    members = [np.flatnonzero(prepared.bin_index == b) for b in range(prepared.edges.size - 1)]
    members = [rows for rows in members if rows.size]
    rng = np.random.default_rng(prepared.random_state)
    sources = [_source_sample(rows.size, prepared, rng) for rows in members]
    problems = []
    for gamma in gammas:
        with np.errstate(over="ignore"):
            scaled = coordinates / (dimension * gamma)
        if not np.isfinite(scaled).all():
            raise CalibrationInputError(
                f"gamma={gamma!r} is too small for the scale of the embedding."
            )
        for rows, sample in zip(members, sources, strict=True):
            if sample is None:
                problems.append((scaled[rows], None, weights[rows]))
            else:
                problems.append((scaled[rows], scaled[rows[sample]], weights[rows[sample]]))
    total = len(problems)

    def report(done: int) -> None:
        if progress is not None:
            progress(done / total, f"local calibration: {done} of {total} bin sums")

    sums = kernel_sums(problems, progress=report)
    signed = np.empty((gammas.size, coordinates.shape[0]))
    for position, result in enumerate(sums):
        g, b = divmod(position, len(members))
        rows, sample = members[b], sources[b]
        if sample is not None:
            result = _scale_sampled_sums(result, weights[rows], sample)
        with np.errstate(invalid="ignore", divide="ignore"):
            signed[g, rows] = result[:, 0] / result[:, 1]
    return signed


def _source_sample(
    n_members: int, prepared: Prepared, rng: np.random.Generator
) -> NDArray[np.intp] | None:
    if prepared.exact or n_members <= prepared.n_sources:
        return None
    return np.sort(rng.choice(n_members, size=prepared.n_sources, replace=False))


def _scale_sampled_sums(
    sums: NDArray[np.float64], weights: NDArray[np.float64], sample: NDArray[np.intp]
) -> NDArray[np.float64]:
    """Sums over a source sample -> estimates of the sums over the whole bin.

    A row always counts itself (kernel 1) exactly; the others are estimated by
    scaling the sample's sum over the other rows by (m - 1) / (sample size without the row).
    """
    m = weights.shape[0]
    in_sample = np.zeros(m, dtype=bool)
    in_sample[sample] = True
    others = sums - np.where(in_sample[:, None], weights, 0.0)
    factor = (m - 1) / (sample.size - in_sample.astype(float))
    return weights + factor[:, None] * others
