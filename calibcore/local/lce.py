"""Local calibration error (LCE), MLCE and their bandwidth curves (Luo et al. 2022, §3).

For a row x in confidence bin B(x) (15 equal-width bins on [0, 1]) the signed
local calibration error is the kernel-weighted mean of confidence minus
correctness over the rows of the same bin, the row itself included (Luo et al. 2022, eq. 4
without the absolute value; eq. 7 of its appendix)::

    SLCE(x) = sum_{i in B(x)} k(x, x_i) (conf_i - correct_i) / sum_{i in B(x)} k(x, x_i)
    k(x, x') = exp(-||phi(x) - phi(x')||_1 / (d * gamma))

``LCE = |SLCE|``; MLCE is its maximum over rows (eq. 5). As gamma grows the
kernel tends to 1 and every row gets its bin's conf - acc, so MLCE tends to the
MCE and the mean LCE to the ECE over the same bins (Lemma 1).

Row weights (``sample_weight``, :mod:`calibcore.data.weights`) multiply the kernel
weights, the weighted Nadaraya-Watson mean::

    SLCE(x) = sum_{i in B(x)} w_i k(x, x_i) (conf_i - correct_i) / sum_{i in B(x)} w_i k(x, x_i)

the mean LCE and the bins' conf - acc become weighted means and the MLCE the maximum over
the rows of positive weight, so integer weights give exactly what the rows repeated by
their weights give (up to round-off). A row of weight 0 contributes to no sum and to no
summary; its own SLCE is still evaluated at its point from the weighted rows around it
(NaN where they weigh nothing, e.g. a bin of zero weight). The representation phi is
fitted on the rows unweighted (:func:`calibcore.local.embed` takes no weights): it only
sets the distances.

The sums are computed exactly without forming an n x n matrix (see
:mod:`calibcore.local._laplace_sums`): for maps of dimension d <= 3 in
``O(n log^d n)``, otherwise by direct compiled sums, ``O(d sum_b n_b^2)``.
For very large tables in more than 3 dimensions the ``"sampled"`` approximation
(the default only beyond :data:`EXACT_ROW_LIMIT` rows) sums each large bin over
a seeded sample of ``n_sources`` rows, scaled up, the row itself still counted
exactly. The summaries over rows and per confidence bin (weighted or not) are computed in
:mod:`calibcore.local._summaries`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore.exceptions import CalibrationInputError
from calibcore.local._estimate import (
    EXACT_ROW_LIMIT,
    Progress,
    bin_gaps,
    bin_mass,
    check_embedding,
    check_gamma,
    prepare,
    signed_lce_curve,
)
from calibcore.local._summaries import (
    LCEBinSummary,
    LCEDistribution,
    bin_summary,
    row_maximum,
    row_mean,
)

Approximation = Literal["auto", "exact", "sampled"]

#: Log grid of bandwidths for MLCE curves (Luo et al. 2022, Figures 1 and 3).
DEFAULT_GAMMAS: NDArray[np.float64] = np.logspace(-3.0, 2.0, 21)
#: Sources per bin of the sampled approximation.
DEFAULT_N_SOURCES = 5_000

__all__ = [
    "DEFAULT_GAMMAS",
    "EXACT_ROW_LIMIT",
    "LCEBinSummary",
    "LCEDistribution",
    "LocalCalibration",
    "MLCECurve",
    "check_embedding",
    "local_calibration",
    "local_calibration_error",
    "maximum_local_calibration_error",
    "mean_local_calibration_error",
    "mlce_curve",
    "signed_local_calibration_error",
    "summarize_bins",
]


@dataclass(frozen=True, eq=False)
class LocalCalibration:
    """Per-row local calibration at one bandwidth.

    Attributes
    ----------
    signed_lce : ndarray of shape (n,)
        Positive where the neighbourhood is over-confident, negative where under-confident.
    confidence : ndarray of shape (n,)
        Top-label confidence max_k p_k.
    correct : ndarray of shape (n,)
        1.0 where the top label is the true class.
    bin_index : ndarray of shape (n,)
        Confidence bin of each row (right-closed equal-width bins).
    edges : ndarray of shape (n_bins + 1,)
    gamma : float
    dimension : int
        Dimension d of the kernel space.
    exact : bool
        False when the sampled approximation was used for some bin.
    weights : ndarray of shape (n,) or None
        The row weights (None: every row counts once).
    """

    signed_lce: NDArray[np.float64]
    confidence: NDArray[np.float64]
    correct: NDArray[np.float64]
    bin_index: NDArray[np.intp]
    edges: NDArray[np.float64]
    gamma: float
    dimension: int
    exact: bool
    weights: NDArray[np.float64] | None = None

    @property
    def lce(self) -> NDArray[np.float64]:
        """Absolute LCE per row (Luo et al. 2022, eq. 4)."""
        return np.abs(self.signed_lce)

    @property
    def mlce(self) -> float:
        """Maximum LCE over rows (of positive weight) (Luo et al. 2022, eq. 5)."""
        if self.weights is None:
            return float(np.abs(self.signed_lce).max())
        return float(row_maximum(np.abs(self.signed_lce)[None, :], self.weights)[0])

    @property
    def mean_lce(self) -> float:
        """Mean LCE over rows (weighted by the row weights)."""
        if self.weights is None:
            return float(np.abs(self.signed_lce).mean())
        return float(row_mean(np.abs(self.signed_lce)[None, :], self.weights)[0])

    @property
    def n_rows(self) -> int:
        return int(self.signed_lce.size)


def local_calibration(
    embedding: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    gamma: float,
    n_bins: int = 15,
    approximation: Approximation = "auto",
    n_sources: int = DEFAULT_N_SOURCES,
    random_state: int = 0,
    progress: Progress | None = None,
    sample_weight: ArrayLike | None = None,
) -> LocalCalibration:
    """Signed and absolute LCE of every row at bandwidth ``gamma`` (Luo et al. 2022, eq. 4).

    Parameters
    ----------
    embedding : array-like of shape (n, d)
        phi(x) for every row (see :func:`calibcore.local.embed`).
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) for a binary problem, or class probabilities.
    gamma : float
        Kernel bandwidth (> 0); the kernel is exp(-||.||_1 / (d * gamma)).
    n_bins : int, default=15
        Equal-width confidence bins on [0, 1].
    approximation : {"auto", "exact", "sampled"}, default="auto"
        ``"auto"`` is exact when d <= 3 or n <= :data:`EXACT_ROW_LIMIT`, else sampled.
    n_sources : int, default=5000
        Rows per bin summed over by the sampled approximation.
    random_state : int, default=0
        Seeds the sampled approximation.
    progress : callable, optional
        ``progress(fraction, message)``, called as bins finish.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights: they multiply the kernel weights (see the module
        docstring); ``embedding`` is used as given, unweighted.

    Returns
    -------
    LocalCalibration
    """
    prepared = prepare(embedding, y_true, y_prob, n_bins, approximation, n_sources,
                        random_state, sample_weight)
    gamma = check_gamma(gamma)
    signed = signed_lce_curve(prepared, np.array([gamma]), progress)[0]
    return LocalCalibration(
        signed_lce=signed, confidence=prepared.confidence, correct=prepared.correct,
        bin_index=prepared.bin_index, edges=prepared.edges, gamma=gamma,
        dimension=prepared.coordinates.shape[1], exact=prepared.exact,
        weights=prepared.weights,
    )


def local_calibration_error(
    embedding: ArrayLike, y_true: ArrayLike, y_prob: ArrayLike, *, gamma: float, n_bins: int = 15,
    sample_weight: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Per-row LCE_gamma (Luo et al. 2022, eq. 4), shape (n,); see :func:`local_calibration`."""
    return local_calibration(embedding, y_true, y_prob, gamma=gamma, n_bins=n_bins,
                             sample_weight=sample_weight).lce


def signed_local_calibration_error(
    embedding: ArrayLike, y_true: ArrayLike, y_prob: ArrayLike, *, gamma: float, n_bins: int = 15,
    sample_weight: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Per-row signed LCE (> 0: over-confident neighbourhood), shape (n,)."""
    return local_calibration(embedding, y_true, y_prob, gamma=gamma, n_bins=n_bins,
                             sample_weight=sample_weight).signed_lce


def maximum_local_calibration_error(
    embedding: ArrayLike, y_true: ArrayLike, y_prob: ArrayLike, *, gamma: float, n_bins: int = 15,
    sample_weight: ArrayLike | None = None,
) -> float:
    """MLCE_gamma, the largest LCE over rows of positive weight (Luo et al. 2022, eq. 5)."""
    return local_calibration(embedding, y_true, y_prob, gamma=gamma, n_bins=n_bins,
                             sample_weight=sample_weight).mlce


def mean_local_calibration_error(
    embedding: ArrayLike, y_true: ArrayLike, y_prob: ArrayLike, *, gamma: float, n_bins: int = 15,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Mean LCE_gamma over rows, weighted by ``sample_weight`` if given."""
    return local_calibration(embedding, y_true, y_prob, gamma=gamma, n_bins=n_bins,
                             sample_weight=sample_weight).mean_lce


@dataclass(frozen=True, eq=False)
class MLCECurve:
    """MLCE and mean LCE against the bandwidth (Luo et al. 2022, Figures 1, 3 and 16-19).

    Attributes
    ----------
    gammas, mlce, mean_lce : ndarray of shape (g,)
    mce : float
        The gamma -> infinity limit of the MLCE (Lemma 1): max_b |conf_b - acc_b|.
    ece : float
        The gamma -> infinity limit of the mean LCE: sum_b (n_b / n) |conf_b - acc_b|
        (with row weights: n_b the bin's weight, conf_b and acc_b weighted means).
    n_rows, dimension : int
    exact : bool
    """

    gammas: NDArray[np.float64]
    mlce: NDArray[np.float64]
    mean_lce: NDArray[np.float64]
    mce: float
    ece: float
    n_rows: int
    dimension: int
    exact: bool


def mlce_curve(
    embedding: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    gammas: ArrayLike | None = None,
    n_bins: int = 15,
    approximation: Approximation = "auto",
    n_sources: int = DEFAULT_N_SOURCES,
    random_state: int = 0,
    progress: Progress | None = None,
    sample_weight: ArrayLike | None = None,
) -> MLCECurve:
    """MLCE and mean LCE over a grid of bandwidths, with their gamma -> infinity limits.

    Parameters
    ----------
    gammas : array-like, optional
        Bandwidths (> 0); default :data:`DEFAULT_GAMMAS`, 21 points from 1e-3 to 1e2.
    Others
        As in :func:`local_calibration`.

    Returns
    -------
    MLCECurve
    """
    prepared = prepare(embedding, y_true, y_prob, n_bins, approximation, n_sources,
                        random_state, sample_weight)
    grid = DEFAULT_GAMMAS if gammas is None else np.atleast_1d(np.asarray(gammas, dtype=float))
    if grid.ndim != 1 or grid.size == 0:
        raise CalibrationInputError("gammas must be a non-empty 1-D list of bandwidths.")
    grid = np.array([check_gamma(g) for g in grid])
    signed = signed_lce_curve(prepared, grid, progress)
    gaps = bin_gaps(prepared)
    counts = (np.bincount(prepared.bin_index, minlength=gaps.size)
              if prepared.weights is None else bin_mass(prepared))
    return MLCECurve(
        gammas=grid,
        mlce=row_maximum(np.abs(signed), prepared.weights),
        mean_lce=row_mean(np.abs(signed), prepared.weights),
        mce=float(np.abs(gaps[counts > 0]).max()),
        ece=float(np.dot(counts, np.abs(np.nan_to_num(gaps))) / counts.sum()),
        n_rows=int(prepared.confidence.size),
        dimension=int(prepared.coordinates.shape[1]),
        exact=prepared.exact,
    )


def summarize_bins(result: LocalCalibration) -> LCEBinSummary:
    """Per-bin |conf - acc|, mean and max LCE, and the sorted LCE for CDFs (weighted by
    the result's row weights, if any)."""
    return bin_summary(result.signed_lce, result.confidence, result.correct,
                       result.bin_index, result.edges, result.weights)
