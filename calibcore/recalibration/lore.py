"""LoRe: local recalibration by kernel-weighted accuracy (Luo et al. 2022, §4, eq. 6).

For a row x with top-label confidence in bin B, the new confidence is the
kernel-weighted accuracy of the calibration rows in the same bin::

    p'(x) = (sum_{i in B} k(x, x_i) 1[f(x_i) = y_i] + s c(x)) / (sum_{i in B} k(x, x_i) + s)
    k(x, x') = exp(-||phi(x) - phi(x')||_1 / (d * gamma))

with c(x) the row's own confidence counted as ``prior_strength`` = s pseudo-rows at
distance zero (a Beta prior centred on the model). s = 0 is the paper's eq. 6, whose
estimate is exactly 1 (and every other class exactly 0) where the nearby calibration
rows were all right; with s = 1 the estimate stays strictly inside (0, 1), falls back
to the model's confidence far from every calibration row, and is eq. 6 where the
kernel mass is large.

As gamma -> infinity this is histogram binning over the same bins; as gamma ->
0, the nearest calibration row of the bin. The predicted class gets p'(x) and
the other classes share 1 - p'(x) in proportion to their original
probabilities (equally if they were all 0), so rows stay on the simplex. A
bin without calibration rows keeps the original probabilities. The paper
recalibrates the confidence of a fixed prediction; in a probability vector a new
confidence below another class's share makes that class the top label.

With row weights w_i (``sample_weight``) the sums of eq. 6 are weighted,
sum_i k(x, x_i) w_i 1[f(x_i) = y_i] and sum_i k(x, x_i) w_i (the prior pseudo-rows keep
their mass s), and rows of weight 0 are left out. The representation phi is not
weighted: its standardization, imputation and PCA are fitted on the calibration rows
of positive weight each counted once. So integer weights give what the repeated rows
give exactly (to rounding) with ``reducer="columns"``, and with the other reducers
up to the difference between phi fitted on the rows and on their repetitions.

The representation phi is fitted on the calibration rows and is part of the
estimator (standardization, one-hot levels, imputation and PCA are plain
arrays; see :class:`calibcore.local.Representation`), so a fitted LoRe
serializes to JSON and applies to new files. Only ``"none"``, ``"pca"`` and
``"columns"`` representations are supported: t-SNE and UMAP models cannot be
saved or applied reproducibly to new rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.distance import cdist

from calibcore._validation import check_in_range, check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.local._encoding import Representation, as_table, fit_representation
from calibcore.local._estimate import check_gamma
from calibcore.local._laplace_sums import kernel_sums
from calibcore.metrics.binning import assign_bins, equal_width_edges
from calibcore.recalibration._base import Recalibrator, register

#: Kernel sums below this are recomputed relative to the nearest calibration row,
#: where exp() of the raw distances underflows (rows far from every calibration row).
_UNDERFLOW = 1e-250
_FALLBACK_BLOCK = 512


@register
class LoRe(Recalibrator):
    """Local recalibration (Luo et al., "Local calibration", eq. 6).

    Parameters
    ----------
    gamma : float, default=0.4
        Kernel bandwidth; the paper uses 0.4 with PCA features and 0.2 with
        2-D/3-D maps.
    n_bins : int, default=15
        Equal-width confidence bins on [0, 1].
    reducer : {"pca", "none", "columns"}, default="pca"
        Representation of the features: PCA of the encoded features, the encoded
        features themselves, or the given numeric columns as they are (a
        user-supplied embedding).
    n_components : int, default=20
        PCA components (clipped to what the calibration rows allow; the paper
        uses 20 for tabular data).
    columns : list of str, optional
        Feature columns to use (default: all).
    categorical : list of str, optional
        Numeric columns to one-hot nevertheless.
    prior_strength : float, default=1.0
        Pseudo-rows at the row's own confidence added to the kernel sums (0: eq. 6 as
        published, which can give a class probability of exactly 0).

    Attributes
    ----------
    representation_ : dict
        The fitted :class:`~calibcore.local.Representation` as plain JSON.
    coordinates_ : ndarray of shape (n_cal, d)
        phi of the calibration rows.
    bin_index_ : ndarray of shape (n_cal,)
        Confidence bin of each calibration row.
    correct_ : ndarray of shape (n_cal,)
        1.0 where the calibration row's top label was right.
    sample_weight_ : ndarray of shape (n_cal,) or None
        Row weights of the calibration rows (None: fitted without weights).
    """

    method = "lore"
    display_name = "LoRe (local recalibration)"
    needs_features = True
    supports_weights = True
    fitted_attributes = ("representation_", "coordinates_", "bin_index_", "correct_",
                         "sample_weight_")
    #: documents written before weights were taken have none
    sample_weight_: NDArray[np.float64] | None = None

    def __init__(
        self,
        *,
        gamma: float = 0.4,
        n_bins: int = 15,
        reducer: Literal["pca", "none", "columns"] = "pca",
        n_components: int = 20,
        columns: list[str] | None = None,
        categorical: list[str] | None = None,
        prior_strength: float = 1.0,
    ) -> None:
        self.gamma = gamma
        self.n_bins = n_bins
        self.reducer = reducer
        self.n_components = n_components
        self.columns = columns
        self.categorical = categorical
        self.prior_strength = prior_strength

    def _check_features(self, features: Any, n_rows: int) -> Any:
        """Accept a DataFrame (categorical columns allowed) or a numeric array."""
        if features is None:
            raise CalibrationInputError(
                "LoRe needs features: pass features= (a table or an (n, d) array)."
            )
        table = as_table(features)
        if table.shape[0] != n_rows:
            raise CalibrationInputError(
                f"features have {table.shape[0]} rows but the probabilities have {n_rows}."
            )
        return table

    def _fit(self, proba, labels, features, heartbeat, weights=None):
        if weights is not None:  # rows of weight 0 are absent
            present = np.flatnonzero(weights > 0)
            proba, labels, weights = proba[present], labels[present], weights[present]
            features = features.iloc[present].reset_index(drop=True)
        check_gamma(self.gamma)
        check_in_range(self.prior_strength, "prior_strength", low=0.0, high=1e6)
        n_bins = check_positive_int(self.n_bins, "n_bins")
        representation = fit_representation(
            features, columns=self.columns, categorical=self.categorical,
            reducer=self.reducer, n_components=self.n_components,
        )
        predicted = proba.argmax(axis=1)
        confidence = proba[np.arange(proba.shape[0]), predicted]
        self.representation_ = representation.to_dict()
        self.coordinates_ = representation.transform(features)
        self.bin_index_ = assign_bins(confidence, equal_width_edges(n_bins))
        self.correct_ = (predicted == labels).astype(np.float64)
        self.sample_weight_ = None if weights is None else weights.astype(np.float64)

    def _predict(self, proba, features, heartbeat):
        representation = Representation.from_dict(self.representation_)
        coordinates = representation.transform(features)
        rows = np.arange(proba.shape[0])
        predicted = proba.argmax(axis=1)
        confidence = proba[rows, predicted]
        new_confidence = self._local_accuracy(coordinates, confidence, heartbeat)
        return redistribute(proba, predicted, new_confidence)

    def _local_accuracy(
        self,
        coordinates: NDArray[np.float64],
        confidence: NDArray[np.float64],
        heartbeat: Callable[[], None] | None = None,
    ) -> NDArray[np.float64]:
        """Eq. 6 (with the prior pseudo-rows) for every row, bin by bin."""
        scale = self.coordinates_.shape[1] * float(self.gamma)
        center = self.coordinates_.mean(axis=0)
        calibration = (self.coordinates_ - center) / scale
        targets = (coordinates - center) / scale
        bins = assign_bins(confidence, equal_width_edges(int(self.n_bins)))
        row_weights = (np.ones_like(self.correct_) if self.sample_weight_ is None
                       else np.asarray(self.sample_weight_, dtype=np.float64))
        weights = np.column_stack([self.correct_ * row_weights, row_weights])
        result = confidence.copy()
        groups = []
        for b in np.unique(bins):
            sources = np.flatnonzero(self.bin_index_ == b)
            if sources.size:
                groups.append((np.flatnonzero(bins == b), sources))
        sums = kernel_sums([(targets[rows], calibration[sources], weights[sources])
                            for rows, sources in groups],
                           progress=None if heartbeat is None else lambda _: heartbeat())
        prior = float(self.prior_strength)
        for (rows, sources), total in zip(groups, sums, strict=True):
            if prior > 0:
                result[rows] = (total[:, 0] + prior * confidence[rows]) / (total[:, 1] + prior)
                continue
            tiny = total[:, 1] < _UNDERFLOW
            result[rows[~tiny]] = total[~tiny, 0] / total[~tiny, 1]
            if tiny.any():
                result[rows[tiny]] = _shifted_accuracy(
                    targets[rows[tiny]], calibration[sources], self.correct_[sources],
                    None if self.sample_weight_ is None else row_weights[sources],
                )
        return result


def _shifted_accuracy(
    targets: NDArray[np.float64], sources: NDArray[np.float64], correct: NDArray[np.float64],
    row_weights: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Eq. 6 with every kernel divided by the largest one (the nearest source), so no
    weight underflows; the ratio is unchanged. Used only for far-away rows."""
    out = np.empty(targets.shape[0])
    for start in range(0, targets.shape[0], _FALLBACK_BLOCK):
        block = slice(start, start + _FALLBACK_BLOCK)
        distance = cdist(targets[block], sources, metric="cityblock")
        kernel = np.exp(distance.min(axis=1, keepdims=True) - distance)
        if row_weights is None:
            out[block] = kernel @ correct / kernel.sum(axis=1)
        else:
            out[block] = kernel @ (correct * row_weights) / (kernel @ row_weights)
    return out


def redistribute(
    proba: NDArray[np.float64], predicted: NDArray[np.intp], confidence: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Give the predicted class ``confidence``; the others share the rest proportionally.

    Other classes that all had probability 0 share the rest equally.
    """
    rows = np.arange(proba.shape[0])
    others = proba.copy()
    others[rows, predicted] = 0.0
    others_total = others.sum(axis=1, keepdims=True)
    uniform = np.ones_like(proba)
    uniform[rows, predicted] = 0.0
    uniform /= max(proba.shape[1] - 1, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(others_total > 0, others / others_total, uniform)
    out = share * (1.0 - confidence)[:, None]
    out[rows, predicted] = confidence
    return out


__all__ = ["LoRe", "redistribute"]
