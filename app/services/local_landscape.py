"""The LCE landscape of a stored dataset (Luo et al. 2022, eq. 4): the job, the result read
back from the caches, and the document it answers with (summaries, CDFs, the rows on the
map, notes). See :mod:`app.services.local` for the caching and the display decimation."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from app.jobs import Job, Progress
from app.services.cache import cache_key
from app.services.cost import CostEstimate
from app.services.jsonable import jsonable
from app.services.local_embedding import (
    CACHE_VERSION,
    ChosenRows,
    RepresentationParams,
    StoredEmbedding,
    cached_embedding,
    embedding_key,
    estimate_embedding,
    locked,
)
from app.services.local_lce import LCE_CACHE_VERSION, LCETask, lce_terms, phi_dimension
from app.services.row_columns import save_row_column
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from calibcore.exceptions import CalibrationInputError
from calibcore.local import LCEBinSummary, LocalCalibration, local_calibration, summarize_bins
from calibcore.local.embedding import Reducer

__all__ = ["CDF_POINTS", "DEFAULT_GAMMA_FEATURES", "DEFAULT_GAMMA_MAP", "MAX_DISPLAY_POINTS",
           "LandscapeParams", "default_gamma", "estimate_landscape", "landscape_result",
           "start_landscape"]

#: Bandwidth used when none is given: 2-D/3-D maps (t-SNE, UMAP, embedding columns, a
#: low-dimensional encoding) and feature spaces (PCA, a wider encoding), as in the paper.
DEFAULT_GAMMA_MAP = 0.2
DEFAULT_GAMMA_FEATURES = 0.4
#: Most rows sent for the scatter (see "Display decimation" in :mod:`app.services.local`).
MAX_DISPLAY_POINTS = 50_000
#: Most points per CDF (more rows are summarized by evenly spaced quantiles).
CDF_POINTS = 256


@dataclass(frozen=True)
class LandscapeParams:
    """One landscape: representation, bandwidth (``None``: the reducer's default), bins,
    and what to send for display (``bin_index=None``: every bin)."""

    representation: RepresentationParams = field(default_factory=RepresentationParams)
    gamma: float | None = None
    n_bins: int = 15
    max_points: int | None = MAX_DISPLAY_POINTS
    bin_index: int | None = None



def estimate_landscape(services: ServiceContext, dataset_id: str,
                       params: RepresentationParams, *,
                       gamma: float | None = None) -> CostEstimate:
    """Seconds of a landscape before it starts: the representation phi
    (:func:`app.services.local_embedding.embedding_terms`) and the LCE's kernel sums
    (:func:`lce_terms`; none when cached)."""
    def more(representation: RepresentationParams, rows: ChosenRows) -> dict[str, float]:
        chosen = default_gamma(representation.reducer, phi_dimension(rows, representation)) \
            if gamma is None else gamma
        key = _lce_key(dataset_id, representation, chosen, 15)
        if services.store.has_document(key):
            return {}
        return lce_terms(rows, representation, 1)

    return estimate_embedding(services.store, dataset_id,
                              services.datasets.prediction_set(dataset_id), params, more)


def default_gamma(reducer: Reducer, dimension: int) -> float:
    """0.4 for PCA (and encoded features of more than 3 dimensions), 0.2 for 2-D/3-D maps."""
    if reducer == "pca" or (reducer in ("none", "columns") and dimension > 3):
        return DEFAULT_GAMMA_FEATURES
    return DEFAULT_GAMMA_MAP


def _lce_key(dataset_id: str, params: RepresentationParams, gamma: float, n_bins: int) -> str:
    return cache_key(dataset_id, "lce", version=(CACHE_VERSION, LCE_CACHE_VERSION),
                     representation=asdict(params), gamma=gamma, n_bins=n_bins)


def _resolved_gamma(params: LandscapeParams, about: dict[str, Any]) -> float:
    if params.gamma is not None:
        return float(params.gamma)
    return default_gamma(params.representation.reducer, int(about["dimension"]))


def start_landscape(services: ServiceContext, dataset_id: str, params: LandscapeParams) -> Job:
    """Validate now (unknown dataset, features or bad combinations fail at once), then
    submit the landscape job; its result is :func:`landscape_result`."""
    task = LCETask.prepare(services, dataset_id, params.representation)
    _check_display(params)

    def run(progress: Progress) -> dict[str, Any]:
        progress.update(0.01, "loading the dataset")
        embedding = cached_embedding(task.store, dataset_id, task.rows, task.representation,
                                     progress, (0.02, 0.75))
        gamma = _resolved_gamma(params, embedding.about)
        key = _lce_key(dataset_id, task.representation, gamma, params.n_bins)
        with locked(key):
            cached = task.store.has_document(key)
            if cached:
                signed = task.store.read_table(key)["signed_lce"].to_numpy()
                exact = bool(task.store.read_document(key)["exact"])
            else:
                def report(fraction: float, message: str) -> None:
                    progress.update(0.75 + 0.2 * fraction, message)

                result = local_calibration(embedding.coordinates,
                                           task.rows.prediction_set.y_true[task.rows.positions],
                                           task.rows.prediction_set.proba[task.rows.positions],
                                           gamma=gamma, n_bins=params.n_bins, progress=report,
                                           sample_weight=task.weights)
                signed, exact = result.signed_lce, result.exact
                task.store.write_table(key, pd.DataFrame({"signed_lce": signed}))
                task.store.write_document(key, {"gamma": gamma, "n_bins": params.n_bins,
                                                "exact": exact})
        progress.update(0.96, "saving the lce and lce_signed row columns")
        _save_columns(task, signed)
        progress.update(0.98, "summarizing bins")
        return _assemble(task, params, embedding, gamma, signed, exact,
                         {"embedding": embedding.cached, "lce": cached})

    estimate = estimate_landscape(services, dataset_id, params.representation,
                                  gamma=params.gamma)
    return services.jobs.submit("lce", run, params={"dataset_id": dataset_id, **asdict(params)},
                                estimate=estimate.as_dict())


def landscape_result(services: ServiceContext, dataset_id: str,
                     params: LandscapeParams) -> dict[str, Any]:
    """A computed landscape read back from the caches (e.g. to draw another bin).

    Raises ``CalibrationInputError`` (code ``not_computed``) when it has not been
    computed for these parameters.
    """
    task = LCETask.prepare(services, dataset_id, params.representation)
    _check_display(params)
    map_key = embedding_key(dataset_id, task.representation)
    store = services.store
    if not store.has_document(map_key):
        raise _not_computed()
    about = store.read_document(map_key)
    gamma = _resolved_gamma(params, about)
    key = _lce_key(dataset_id, task.representation, gamma, params.n_bins)
    if not store.has_document(key):
        raise _not_computed()
    map_2d = store.read_table(map_key)[["map_x", "map_y"]].to_numpy()
    signed = store.read_table(key)["signed_lce"].to_numpy()
    embedding = StoredEmbedding(np.empty((map_2d.shape[0], 0)), map_2d, about, True)
    return _assemble(task, params, embedding, gamma, signed,
                     bool(store.read_document(key)["exact"]), {"embedding": True, "lce": True})


def _not_computed() -> CalibrationInputError:
    return CalibrationInputError(
        "this landscape has not been computed yet (or its dataset changed); run it first "
        "(POST /api/v1/datasets/{id}/lce).", code="not_computed")


def _check_display(params: LandscapeParams) -> None:
    if params.bin_index is not None and not 0 <= params.bin_index < params.n_bins:
        raise CalibrationInputError(
            f"bin must be between 0 and {params.n_bins - 1} (n_bins={params.n_bins}); "
            f"got {params.bin_index}.", code="invalid_parameters")


def _save_columns(task: LCETask, signed: NDArray[np.float64]) -> None:
    full = np.full(task.rows.prediction_set.n_rows, np.nan)
    full[task.rows.positions] = signed
    save_row_column(task.store, task.dataset_id, "lce_signed", full)
    save_row_column(task.store, task.dataset_id, "lce", np.abs(full))


def _assemble(task: LCETask, params: LandscapeParams, embedding: StoredEmbedding, gamma: float,
              signed: NDArray[np.float64], exact: bool, cached: dict[str, bool]) -> dict[str, Any]:
    dimension = int(embedding.about["dimension"])
    result = task.local(signed, gamma, params.n_bins, dimension)
    summary = summarize_bins(result)
    filled = summary.count > 0
    n_rows = result.n_rows
    lce = result.lce
    weights = result.weights
    # The worst row of positive weight (a row of weight 0 may have no LCE, NaN).
    worst = int(np.argmax(lce if weights is None else np.where(weights > 0, lce, -np.inf)))
    representation = task.representation
    display = _display_rows(task, params, embedding.map_2d, result)
    mass = summary.count if summary.weight is None else summary.weight
    return jsonable({
        "dataset_id": task.dataset_id,
        "params": {**asdict(representation), "features": list(representation.features or ()),
                   "gamma": gamma, "gamma_default": params.gamma is None,
                   "n_bins": params.n_bins},
        "n_rows": n_rows,
        "n_dataset_rows": task.rows.prediction_set.n_rows,
        "dimension": dimension,
        "embedding": embedding.about,
        "exact": exact,
        "mlce": result.mlce,
        "mean_lce": result.mean_lce,
        "mce": float(np.nanmax(summary.gap)),  # NaN for bins of no rows or no weight
        "ece": (float(np.dot(summary.count[filled], summary.gap[filled]) / n_rows)
                if weights is None else
                float(np.nansum(mass * summary.gap) / mass.sum())),
        "worst_row": {**_row_record(task, result, embedding.map_2d, worst)},
        "bins": _bins(summary),
        "cdf": _cdf(np.sort(lce)) if weights is None else
        _cdf(lce[np.argsort(lce, kind="stable")], weights[np.argsort(lce, kind="stable")]),
        "rows": display,
        "cached": cached,
        "saved_columns": ["lce", "lce_signed"],
        "notes": _notes(task, params, embedding, gamma, exact, display),
        **weighting(task.rows.prediction_set, task.mask),
    })


def _row_record(task: LCETask, result: LocalCalibration, map_2d: NDArray[np.float64],
                index: int) -> dict[str, Any]:
    prediction_set = task.rows.prediction_set
    position = int(task.rows.positions[index])
    return {"row": position,
            "id": None if prediction_set.ids is None else prediction_set.ids[position],
            "lce": float(result.lce[index]), "signed_lce": float(result.signed_lce[index]),
            "confidence": float(result.confidence[index]),
            "bin": int(result.bin_index[index]),
            "x": float(map_2d[index, 0]), "y": float(map_2d[index, 1])}


def _display_rows(task: LCETask, params: LandscapeParams, map_2d: NDArray[np.float64],
                  result: LocalCalibration) -> dict[str, Any]:
    selected = (np.arange(result.n_rows) if params.bin_index is None
                else np.flatnonzero(result.bin_index == params.bin_index))
    sampled = params.max_points is not None and selected.size > params.max_points
    if sampled:
        rng = np.random.default_rng(task.representation.random_state)
        selected = rng.choice(selected, size=params.max_points, replace=False)
    shown = selected[np.argsort(result.lce[selected], kind="stable")]
    prediction_set = task.rows.prediction_set
    positions = task.rows.positions[shown]
    classes = np.asarray(prediction_set.classes, dtype=object)
    ids = ([None] * positions.size if prediction_set.ids is None
           else [str(value) for value in prediction_set.ids[positions]])
    return {
        "bin": params.bin_index,
        "n_selected": int((result.bin_index == params.bin_index).sum()
                          if params.bin_index is not None else result.n_rows),
        "n_shown": int(shown.size),
        "sampled": bool(sampled),
        "row": positions, "id": ids,
        "x": map_2d[shown, 0], "y": map_2d[shown, 1],
        "lce": result.lce[shown], "signed_lce": result.signed_lce[shown],
        "confidence": result.confidence[shown],
        "label": classes[prediction_set.y_true[positions]].tolist(),
        "prediction": classes[prediction_set.proba[positions].argmax(axis=1)].tolist(),
        "bin_index": result.bin_index[shown],
    }


def _cdf(sorted_values: NDArray[np.float64],
         sorted_weights: NDArray[np.float64] | None = None) -> dict[str, Any]:
    """Empirical CDF points: every value up to :data:`CDF_POINTS` rows, evenly spaced
    quantiles beyond; with weights, the weighted CDF of the rows of positive weight and
    their Kish ``n_eff``."""
    if sorted_weights is not None:
        positive = sorted_weights > 0
        sorted_values, mass = sorted_values[positive], np.cumsum(sorted_weights[positive])
        count = sorted_values.size
        cumulative = mass / mass[-1] if count else mass
        positions = (np.arange(count) if count <= CDF_POINTS else
                     np.unique(np.linspace(0, count - 1, CDF_POINTS).round().astype(np.intp)))
        kept = sorted_weights[positive]
        n_eff = float(kept.sum() ** 2 / np.square(kept).sum()) if count else 0.0
        return {"lce": sorted_values[positions], "cumulative": cumulative[positions],
                "n": count, "n_eff": n_eff}
    count = sorted_values.size
    if count <= CDF_POINTS:
        return {"lce": sorted_values, "cumulative": np.arange(1, count + 1) / max(count, 1),
                "n": count}
    positions = np.unique(np.linspace(0, count - 1, CDF_POINTS).round().astype(np.intp))
    return {"lce": sorted_values[positions], "cumulative": (positions + 1) / count, "n": count}


def _bins(summary: LCEBinSummary) -> list[dict[str, Any]]:
    bins = []
    for b in range(summary.count.size):
        distribution = summary.distribution(b)
        cdf = (_cdf(distribution.values) if summary.sorted_weight is None else
               _cdf(distribution.values,
                    summary.sorted_weight[summary.offsets[b]:summary.offsets[b + 1]]))
        weighted = {} if summary.weight is None else {"weight": summary.weight[b]}
        bins.append({
            "index": b, "lower": distribution.lower, "upper": distribution.upper,
            "count": distribution.count, "confidence": summary.confidence[b],
            "accuracy": summary.accuracy[b], "gap": distribution.gap,
            "mean_lce": distribution.mean_lce, "mean_signed_lce": summary.mean_signed_lce[b],
            "max_lce": summary.max_lce[b], "cdf": cdf, **weighted})
    return bins


def _notes(task: LCETask, params: LandscapeParams, embedding: StoredEmbedding, gamma: float,
           exact: bool, display: dict[str, Any]) -> list[str]:
    representation = task.representation
    n_rows, n_all = task.rows.positions.size, task.rows.prediction_set.n_rows
    notes = [f"Rows: {representation.subset} ({n_rows:,} of {n_all:,})."
             if representation.subset != "all" else f"Rows: all {n_rows:,}."]
    about = embedding.about
    notes.append(f"Kernel space phi: {_reducer_words(representation, about)}; the map shows "
                 f"{about['map_source']}.")
    notes.extend(about["notes"])
    if params.gamma is None:
        notes.append(f"gamma = {gamma:g}, the default for this representation (0.2 for 2-D/3-D "
                     "maps, 0.4 for PCA and wider feature spaces, as in the paper).")
    notes.append(f"LCE: Laplace kernel exp(-||phi(x) - phi(x')||_1 / (d gamma)) with d = "
                 f"{about['dimension']}, gamma = {gamma:g}, over the rows of the same "
                 f"equal-width confidence bin ({params.n_bins} bins), the row itself included; "
                 + ("computed exactly." if exact else "large bins summed over a seeded sample "
                    "of rows (an approximation)."))
    if task.weights is not None:
        notes.append("Row weights: each row's kernel weight is multiplied by its weight "
                     "(a weighted kernel mean), and the means, the bins' |conf − acc|, the "
                     "CDFs and the MCE/ECE are weighted; the MLCE is the largest LCE over the "
                     "rows of positive weight. φ is fitted on the rows unweighted.")
    if display["sampled"]:
        notes.append(f"The map draws a seeded sample of {display['n_shown']:,} of the "
                     f"{display['n_selected']:,} rows; every row's LCE is in the summaries "
                     "and in the saved columns.")
    notes.append("Saved as the per-row columns “lce” and “lce_signed” (add them to a "
                 "recalibration download); rows outside the chosen subset are empty.")
    return notes


def _reducer_words(params: RepresentationParams, about: dict[str, Any]) -> str:
    encoded = f"{len(about['columns'])} feature columns ({about['n_encoded']} after encoding)"
    words: dict[str, str] = {
        "none": f"the standardized, encoded features: {encoded}",
        "pca": f"PCA({about['dimension']}) of {encoded}",
        "tsne": f"{about['dimension']}-D t-SNE of {encoded}",
        "umap": f"{about['dimension']}-D UMAP of {encoded}",
        "columns": f"the embedding columns {', '.join(about['columns'])} as given",
    }
    return words[params.reducer]
