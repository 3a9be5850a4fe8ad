"""The MLCE curve of a stored dataset: MLCE and mean LCE over a grid of bandwidths, with the
MCE and ECE as their gamma -> infinity limits (Luo et al. 2022, eq. 5 and Lemma 1), cached
per (representation, gammas, bins) as ``<dataset_id>.lce-curve.<hash>`` (JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.jobs import Job, Progress
from app.services.cache import cache_key
from app.services.cost import CostEstimate
from app.services.jsonable import jsonable
from app.services.local_embedding import (
    CACHE_VERSION,
    RepresentationParams,
    cached_embedding,
    estimate_embedding,
    locked,
)
from app.services.local_lce import LCE_CACHE_VERSION, LCETask, lce_terms
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from calibcore.exceptions import CalibrationInputError
from calibcore.local import DEFAULT_GAMMAS, mlce_curve

__all__ = ["CurveParams", "estimate_curve", "start_curve"]


@dataclass(frozen=True)
class CurveParams:
    """An MLCE curve over ``gammas``, or over a log grid of ``n_gammas`` bandwidths from
    ``gamma_min`` to ``gamma_max``."""

    representation: RepresentationParams = field(default_factory=RepresentationParams)
    gammas: tuple[float, ...] | None = None
    gamma_min: float = float(DEFAULT_GAMMAS[0])
    gamma_max: float = float(DEFAULT_GAMMAS[-1])
    n_gammas: int = DEFAULT_GAMMAS.size
    n_bins: int = 15

    def grid(self) -> NDArray[np.float64]:
        """The bandwidths, sorted and distinct."""
        if self.gammas is not None:
            return np.unique(np.asarray(self.gammas, dtype=np.float64))
        if not 0 < self.gamma_min < self.gamma_max:
            raise CalibrationInputError(
                f"the gamma grid needs 0 < gamma_min < gamma_max; got gamma_min="
                f"{self.gamma_min:g}, gamma_max={self.gamma_max:g}.", code="invalid_parameters")
        return np.logspace(np.log10(self.gamma_min), np.log10(self.gamma_max), self.n_gammas)


def estimate_curve(services: ServiceContext, dataset_id: str,
                   params: CurveParams) -> CostEstimate:
    """Seconds of an MLCE curve before it starts: phi and one LCE per bandwidth."""
    n_gammas = int(params.grid().size)
    return estimate_embedding(
        services.store, dataset_id, services.datasets.prediction_set(dataset_id),
        params.representation,
        lambda representation, rows: lce_terms(rows, representation, n_gammas))


def start_curve(services: ServiceContext, dataset_id: str, params: CurveParams) -> Job:
    """Validate now, then submit the MLCE-curve job (result: gammas, mlce, mean_lce, mce, ece)."""
    task = LCETask.prepare(services, dataset_id, params.representation)
    gammas = params.grid()
    key = cache_key(dataset_id, "lce-curve", version=(CACHE_VERSION, LCE_CACHE_VERSION),
                    representation=asdict(task.representation), gammas=gammas.tolist(),
                    n_bins=params.n_bins)

    def run(progress: Progress) -> dict[str, Any]:
        progress.update(0.01, "loading the dataset")
        with locked(key):
            if task.store.has_document(key):
                progress.update(0.99, "loaded the cached curve")
                return {**task.store.read_document(key), "cached": True,
                        **weighting(task.rows.prediction_set, task.mask)}
            embedding = cached_embedding(task.store, dataset_id, task.rows,
                                         task.representation, progress, (0.02, 0.6))

            def report(fraction: float, message: str) -> None:
                progress.update(0.6 + 0.38 * fraction, f"gamma sweep ({gammas.size} "
                                f"bandwidths): {message}")

            positions = task.rows.positions
            curve = mlce_curve(embedding.coordinates, task.rows.prediction_set.y_true[positions],
                               task.rows.prediction_set.proba[positions], gammas=gammas,
                               n_bins=params.n_bins, progress=report,
                               sample_weight=task.weights)
            document = jsonable({
                "dataset_id": dataset_id,
                "params": {**asdict(task.representation),
                           "features": list(task.representation.features or ()),
                           "n_bins": params.n_bins},
                "gammas": curve.gammas, "mlce": curve.mlce, "mean_lce": curve.mean_lce,
                "mce": curve.mce, "ece": curve.ece, "n_rows": curve.n_rows,
                "dimension": curve.dimension, "exact": curve.exact,
                "embedding": embedding.about,
                "notes": [f"MLCE and mean LCE at {gammas.size} bandwidths from {gammas[0]:g} "
                          f"to {gammas[-1]:g}; as gamma grows they tend to the MCE and the ECE "
                          f"over the same {params.n_bins} bins (Lemma 1).",
                          *embedding.about["notes"]],
            })
            task.store.write_document(key, document)
        return {**document, "cached": False, **weighting(task.rows.prediction_set, task.mask)}

    return services.jobs.submit("lce_curve", run,
                                params={"dataset_id": dataset_id, **asdict(params)},
                                estimate=estimate_curve(services, dataset_id, params).as_dict())
