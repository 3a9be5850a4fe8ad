"""What the LCE landscape (:mod:`app.services.local_landscape`) and the MLCE curve
(:mod:`app.services.local_curve`) share: a validated request's chosen rows and weights
(:class:`LCETask`), the version of their cached results, and the work of the LCE's kernel
sums for the cost estimates (Luo et al. 2022, eq. 4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.services.local_embedding import ChosenRows, RepresentationParams, choose_rows
from app.services.shared import ServiceContext
from app.store import Store
from calibcore.data import top_label
from calibcore.local import EXACT_ROW_LIMIT, LocalCalibration
from calibcore.local.lce import DEFAULT_N_SOURCES
from calibcore.metrics import assign_bins, equal_width_edges

__all__ = ["LCE_CACHE_VERSION", "LCETask", "lce_terms", "phi_dimension"]

#: Version of the cached LCEs and curves (2: weighted on weighted datasets); the
#: embeddings keep :data:`app.services.local_embedding.CACHE_VERSION`.
LCE_CACHE_VERSION = 2


def phi_dimension(rows: ChosenRows, representation: RepresentationParams) -> int:
    """The dimension phi will have (encoded features counted as their columns)."""
    if representation.reducer == "columns":
        return len(representation.embedding_columns or ())
    if representation.reducer == "none":
        return max(len(representation.features or rows.prediction_set.features.columns), 1)
    return int(representation.n_components)


def lce_terms(rows: ChosenRows, representation: RepresentationParams,
              n_gammas: int) -> dict[str, float]:
    """The work of the LCE's kernel sums at ``n_gammas`` bandwidths: ``n log2(n) ** d``
    for maps of d <= 3 dimensions, else ``d sum_b n_b ** 2`` over the confidence bins
    (with each large bin's sources capped by the sampled approximation beyond
    ``EXACT_ROW_LIMIT`` rows), Luo et al. 2022, eq. 4 summed as
    :mod:`calibcore.local.lce` does."""
    n_rows = int(rows.positions.size)
    dimension = phi_dimension(rows, representation)
    if dimension <= 3:
        return {"lce_tree": n_gammas * n_rows * float(np.log2(max(n_rows, 2))) ** dimension}
    confidence = rows.prediction_set.proba[rows.positions].max(axis=1)
    counts = np.bincount(np.minimum((confidence * 15).astype(np.intp), 14), minlength=15)
    sources = counts if n_rows <= EXACT_ROW_LIMIT else np.minimum(counts, DEFAULT_N_SOURCES)
    return {"lce_pairs": n_gammas * dimension * float(np.sum(counts * sources))}


@dataclass(frozen=True, eq=False)
class LCETask:
    """A validated request, ready to run in a job (or to be read back from the caches)."""

    store: Store
    dataset_id: str
    rows: ChosenRows
    representation: RepresentationParams

    @classmethod
    def prepare(cls, services: ServiceContext, dataset_id: str,
                params: RepresentationParams) -> LCETask:
        prediction_set = services.datasets.prediction_set(dataset_id)
        representation, rows = choose_rows(prediction_set, params)
        return cls(services.store, dataset_id, rows, representation)

    @property
    def weights(self) -> NDArray[np.float64] | None:
        """The row weights of the chosen rows (None for an unweighted dataset)."""
        weights = self.rows.prediction_set.weights
        return None if weights is None else weights[self.rows.positions]

    @property
    def mask(self) -> NDArray[np.bool_]:
        """The chosen rows as a mask over the dataset's rows (for Kish's n_eff)."""
        mask = np.zeros(self.rows.prediction_set.n_rows, dtype=bool)
        mask[self.rows.positions] = True
        return mask

    def local(self, signed: NDArray[np.float64], gamma: float, n_bins: int,
              dimension: int) -> LocalCalibration:
        """The core's result rebuilt from the cached signed LCE."""
        prediction_set, positions = self.rows.prediction_set, self.rows.positions
        problem = top_label(prediction_set.y_true[positions], prediction_set.proba[positions])
        confidence, correct = problem.scores[0], problem.outcomes[0]
        edges = equal_width_edges(n_bins)
        return LocalCalibration(signed_lce=signed, confidence=confidence, correct=correct,
                                bin_index=assign_bins(confidence, edges), edges=edges,
                                gamma=gamma, dimension=dimension, exact=True,
                                weights=self.weights)
