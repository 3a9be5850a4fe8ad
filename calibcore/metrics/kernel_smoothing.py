"""Smooth ECE: reflected-Gaussian kernel smoothing on a grid.

The smooth ECE of Błasiok & Nakkiran (2023) smooths the residuals
``r_i = v_i - o_i`` (score minus outcome) with a Gaussian kernel reflected at 0
and 1, and integrates the absolute smoothed residual against the smoothed
density of the scores::

    smECE_sigma = sum_t |K_sigma * r|(t) / sum_t (K_sigma * 1)(t) + eps)

The bandwidth is the fixed point ``sigma = smECE_sigma`` found by bisection.
Everything here reproduces ``relplot`` 1.0.3 (the reference implementation)
step by step so values agree to floating-point noise: scores are split linearly
onto a grid of ``max(2000, round(20 / sigma)) // 2 + 1`` points, the grid is
reflected at both ends and convolved with the (unnormalized) kernel sampled on
the same grid, and the result is linearly interpolated on the evaluation mesh.
The convolution runs through the DCT/FFT and the grid sums come from prefix sums
over the sorted scores, both batched over rows of a weight matrix, so
bootstrap resamples are rows.

Functions here trust their inputs (validated by the public callers).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray
from scipy import fft

from calibcore.metrics._prefix_sums import prefix_sums

__all__ = [
    "DENSITY_EPS",
    "KernelSmoother",
    "grid_size",
    "interpolate",
    "reflected_gaussian_convolve",
    "smooth_ece_rows",
]

#: Points of the mesh the smooth ECE integrates over (relplot ``smECE_mesh_pts``).
MESH_POINTS = 200
#: Added to the smoothed density before dividing (relplot's ``smooth`` eps).
DENSITY_EPS = 1e-4
#: Smallest bandwidth the fixed-point search accepts (relplot ``smECE`` eps).
BANDWIDTH_FLOOR = 1e-3
#: Bisection steps of the fixed-point search (relplot ``search_param`` refine).
BISECTION_STEPS = 10
#: Largest prime factor of a DCT length kept on the DCT (:func:`_by_dct`); from timings
#: of both paths on odd sizes of 1,001-3,417 points (37: equal, 61: the FFT 1.4x faster).
DCT_LARGEST_FACTOR = 40


def grid_size(bandwidth: float) -> int:
    """Grid points used to smooth at ``bandwidth`` (about 10 per bandwidth, at least 1001)."""
    return max(2000, round(20.0 / bandwidth)) // 2 + 1


def mesh_size(bandwidth: float) -> int:
    """Evaluation points of the smooth ECE integral at ``bandwidth``."""
    return max(round(10.0 / bandwidth), MESH_POINTS)


class GridSplitter:
    """Linear split of weighted rows onto any grid, from prefix sums over sorted scores.

    relplot gives each value a share ``1 - frac`` on the grid point left of its
    score and ``frac`` on the one to its right. Over the scores falling
    between grid points j and j + 1 those shares sum to
    ``S_j - ((M - 1) T_j - j S_j)`` and ``(M - 1) T_j - j S_j``, where S_j and
    T_j are the sums of the values and of value * score there. With prefix
    sums of both, any grid size costs O(M log n) instead of O(n).

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Scores in [0, 1], sorted ascending.
    rows : ndarray of shape (b, n)
        Values to split, one row per problem or resample.
    """

    def __init__(self, scores: NDArray[np.float64], rows: NDArray[np.float64],
                 weights: NDArray[np.float64] | None = None) -> None:
        # with ``weights``, the rows to split are those of ``rows`` then those of
        # ``weights`` (as if stacked, without stacking them); the running sums are one
        # compiled pass, NumPy's to the bit (calibcore.metrics._prefix_sums)
        self._scores = scores
        if weights is None:
            weights = np.empty((0, scores.size))
        self._sums, self._moments = prefix_sums(
            np.ascontiguousarray(scores, dtype=np.float64),
            np.ascontiguousarray(rows, dtype=np.float64),
            np.ascontiguousarray(weights, dtype=np.float64))

    def split(self, n_grid: int) -> NDArray[np.float64]:
        """Grid sums of shape (b, n_grid) on ``linspace(0, 1, n_grid)``."""
        inner = np.searchsorted(self._scores, np.linspace(0.0, 1.0, n_grid)[1:-1], side="left")
        bounds = np.concatenate([[0], inner, [self._scores.size]])
        segment = np.diff(self._sums[:, bounds], axis=1)
        moment = np.diff(self._moments[:, bounds], axis=1)
        right = (n_grid - 1) * moment - np.arange(n_grid - 1) * segment
        grid = np.zeros((segment.shape[0], n_grid))
        grid[:, :-1] += segment - right
        grid[:, 1:] += right
        return grid


def reflected_gaussian_convolve(grid: NDArray[np.float64], bandwidth: float) -> NDArray[np.float64]:
    """Convolve each row with a Gaussian reflected at 0 and 1, as relplot does.

    relplot mirrors the grid at both ends (without repeating the end points)
    and takes the "valid" convolution with the Gaussian density sampled on the
    grid itself (no grid-spacing factor; the smooth ECE is a ratio of two such
    convolutions up to ``DENSITY_EPS``), centred on the grid. For an odd grid
    size that is a convolution of the even periodic extension with an even
    kernel, which the type-I DCT diagonalizes; for an even size relplot's
    kernel sits half a cell off centre, so the mirrored grid is convolved
    through a real FFT long enough to avoid wrap-around. An odd size whose DCT
    is slow (see :func:`_by_dct`) takes the FFT too: the same convolution, equal
    to rounding.
    """
    return _convolve_spectrum(_grid_spectrum(grid), grid.shape[1], bandwidth)


def _grid_spectrum(grid: NDArray[np.float64]) -> NDArray[np.float64] | NDArray[np.complex128]:
    """The transform of each row that :func:`reflected_gaussian_convolve` multiplies by the
    kernel's: it does not depend on the bandwidth, so a search over bandwidths sharing a
    grid size transforms the grid once."""
    n_grid = grid.shape[1]
    if _by_dct(n_grid):
        return fft.dct(grid, type=1, axis=1)
    flipped = grid[:, ::-1]
    extended = np.concatenate([flipped[:, :-1], grid, flipped[:, 1:]], axis=1)
    return fft.rfft(extended, _fft_length(n_grid), axis=1)


@functools.cache
def _by_dct(n_grid: int) -> bool:
    """Whether a grid of ``n_grid`` points is convolved through the type-I DCT: an odd
    size whose transform length 2 (n_grid - 1) has no prime factor above
    :data:`DCT_LARGEST_FACTOR`. pocketfft's DCT of a length with a large prime factor
    is several times slower than the real FFT of the mirrored grid (40 rows of 1,707
    points, 2 x 2 x 853: 3.7 ms against 0.9 ms; of 1,281 points, 2^9 x 5: 0.6 ms
    against 1.1 ms)."""
    if n_grid % 2 == 0:
        return False
    rest, largest, factor = 2 * (n_grid - 1), 1, 2
    while factor * factor <= rest:
        while rest % factor == 0:
            rest //= factor
            largest = factor
        factor += 1
    return max(largest, rest) <= DCT_LARGEST_FACTOR  # what is left of rest is 1 or a prime


def _fft_length(n_grid: int) -> int:
    return fft.next_fast_len(3 * n_grid - 2, real=True)


def _convolve_spectrum(
    spectrum: NDArray[np.float64] | NDArray[np.complex128], n_grid: int, bandwidth: float
) -> NDArray[np.float64]:
    """:func:`reflected_gaussian_convolve` from the rows' :func:`_grid_spectrum`."""
    offsets = np.linspace(0.0, 1.0, n_grid) - 0.5
    kernel = np.exp(-offsets * offsets / (2.0 * bandwidth**2)) / (np.sqrt(2.0 * np.pi) * bandwidth)
    if _by_dct(n_grid):
        centre = n_grid // 2
        half_kernel = np.zeros(n_grid)
        half_kernel[: centre + 1] = kernel[centre:]
        response = fft.dct(half_kernel, type=1)
        return fft.idct(spectrum * response, type=1, axis=1)
    length = _fft_length(n_grid)
    start = n_grid - 1 + n_grid // 2
    return fft.irfft(spectrum * fft.rfft(kernel, length), length, axis=1)[:, start : start + n_grid]


def interpolate(grid: NDArray[np.float64], points: NDArray[np.float64]) -> NDArray[np.float64]:
    """Linear interpolation of rows of grid values (on ``linspace(0, 1, M)``) at ``points``."""
    n_grid = grid.shape[1]
    left = np.clip((points * (n_grid - 1)).astype(np.intp), 0, n_grid - 2)
    share = (points - left / (n_grid - 1)) * (n_grid - 1)
    return grid[:, left] * (1.0 - share) + grid[:, left + 1] * share


class KernelSmoother:
    """Reflected-Gaussian smoothing of weighted rows of one problem.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Scores in [0, 1], sorted ascending.
    values : ndarray of shape (b, n)
        Rows of values to smooth (residuals, outcomes, ...), already weighted.
    weights : ndarray of shape (b, n)
        Rows of row weights (ones for the data, counts for a bootstrap resample);
        their smoothing is the (unnormalized) density.
    """

    def __init__(
        self,
        scores: NDArray[np.float64],
        values: NDArray[np.float64],
        weights: NDArray[np.float64],
    ) -> None:
        self._rows = values.shape[0]
        self._splitter = GridSplitter(scores, values, weights)
        # each grid size's transformed grid sums (rows of values, then of weights)
        self._spectra: dict[int, NDArray[np.float64] | NDArray[np.complex128]] = {}

    @property
    def n_rows(self) -> int:
        """Rows b of values (and of weights)."""
        return self._rows

    def smooth(
        self,
        bandwidth: float,
        points: NDArray[np.float64],
        rows: NDArray[np.intp] | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Smoothed values and smoothed weights at ``points``, for ``rows`` (all by default).

        Returns
        -------
        values, density : ndarrays of shape (len(rows), len(points))
        """
        n_grid = grid_size(bandwidth)
        if n_grid not in self._spectra:
            self._spectra[n_grid] = _grid_spectrum(self._splitter.split(n_grid))
        spectrum = self._spectra[n_grid]
        if rows is not None:
            spectrum = np.concatenate([spectrum[rows], spectrum[self._rows + rows]])
        smoothed = interpolate(_convolve_spectrum(spectrum, n_grid, bandwidth), points)
        half = smoothed.shape[0] // 2
        return smoothed[:half], smoothed[half:]

    def smooth_ece(
        self, bandwidths: NDArray[np.float64], rows: NDArray[np.intp] | None = None
    ) -> NDArray[np.float64]:
        """smECE of each row at its own bandwidth (relplot ``smECE_sigma``).

        Rows sharing a bandwidth are smoothed together, so a block of bootstrap
        resamples with nearby bandwidths costs a few batched convolutions.
        """
        rows = np.arange(self._rows) if rows is None else rows
        values = np.empty(rows.size)
        for bandwidth in np.unique(bandwidths):
            same = np.flatnonzero(bandwidths == bandwidth)
            mesh = np.linspace(0.0, 1.0, mesh_size(float(bandwidth)))
            residual, density = self.smooth(float(bandwidth), mesh, rows[same])
            values[same] = np.abs(residual).sum(axis=1) / (density + DENSITY_EPS).sum(axis=1)
        return values


def fixed_point_bandwidths(smoother: KernelSmoother) -> NDArray[np.float64]:
    """Per row, the bandwidth sigma with sigma ~= smECE_sigma, by relplot's bisection.

    Starting from 1, bisect on [0, 1] for ``BISECTION_STEPS`` steps, keeping the
    largest bandwidth found at which ``sigma >= smECE_sigma`` (and
    ``sigma >= BANDWIDTH_FLOOR``). All rows bisect in lockstep.
    """

    def too_wide(bandwidths: NDArray[np.float64], rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        return (bandwidths < BANDWIDTH_FLOOR) | (bandwidths < smoother.smooth_ece(bandwidths, rows))

    everyone = np.arange(smoother.n_rows)
    widest = too_wide(np.ones(everyone.size), everyone)
    active = np.flatnonzero(~widest)
    high, low = np.ones(active.size), np.zeros(active.size)
    for _ in range(BISECTION_STEPS):
        middle = (high + low) / 2.0
        wide = too_wide(middle, active)
        low = np.where(wide, middle, low)
        high = np.where(wide, high, middle)
    bandwidths = np.ones(everyone.size)
    bandwidths[active] = high
    return bandwidths


def smooth_ece_rows(
    scores: NDArray[np.float64],
    residuals: NDArray[np.float64],
    weights: NDArray[np.float64],
    bandwidth: float | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """smooth ECE and its bandwidth for each row of weights.

    Parameters
    ----------
    scores, residuals : ndarray of shape (n,)
        Scores v_i (sorted ascending) and residuals v_i - o_i.
    weights : ndarray of shape (b, n)
        Row weights; ones for the data itself, counts for bootstrap resamples.
    bandwidth : float, optional
        A fixed bandwidth; by default each row gets its fixed-point bandwidth.

    Returns
    -------
    values, bandwidths : ndarrays of shape (b,)
    """
    smoother = KernelSmoother(scores, weights * residuals, weights)
    if bandwidth is None:
        bandwidths = fixed_point_bandwidths(smoother)
    else:
        bandwidths = np.full(weights.shape[0], bandwidth)
    return smoother.smooth_ece(bandwidths), bandwidths
