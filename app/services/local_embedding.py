"""The representation phi behind the Local page, validated and cached (Luo et al. 2022, §3.2).

Chosen rows and feature columns -> :func:`calibcore.local.embed` (encoding,
reducer fitted on a seeded sample, the other rows placed). The result is cached
per :class:`RepresentationParams` under ``<dataset_id>.lce-embedding.<hash>``: a
Parquet table of phi and the 2-D map, and a JSON document saying how they were
made (written last: its presence means the table is complete). LCE landscapes
and MLCE curves at any bandwidth reuse it (:mod:`app.services.local`).

umap-learn compiles its code on first use in each process (about a minute on
2 cores the first time on a machine; later processes load numba's on-disk cache):
:func:`start_warm_up` does that in a background job at server start, and a UMAP
request arriving meanwhile waits for it, saying so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from app.jobs import Job, Progress
from app.services.cache import cache_key
from app.services.cost import CostEstimate, cost_model
from app.services.diagnostics import Subset, rows_for
from app.services.jsonable import jsonable
from app.services.shared import ServiceContext
from app.store import Store
from calibcore.data import PredictionSet
from calibcore.exceptions import CalibrationInputError
from calibcore.local.embedding import (
    DEFAULT_SAMPLE_SIZE,
    UMAP_TRANSFORM_ROWS,
    Embedding,
    Reducer,
    embed,
    warm_up,
)

#: Bump when a cached document or table changes meaning, so stale caches are not served.
CACHE_VERSION = 1
#: The progress message while umap-learn compiles its code in this process.
PREPARING_UMAP = "preparing UMAP (first use)…"
#: The fitting sample offered as the cheaper setting.
CHEAPER_SAMPLE = 2_000


@dataclass(frozen=True)
class RepresentationParams:
    """How phi is built, and on which rows; the embedding cache key is made of these.

    ``features=None`` uses every feature column; ``embedding_columns`` are the
    columns of ``reducer="columns"``; ``sample_size=None`` fits the reducer on
    every row.
    """

    features: tuple[str, ...] | None = None
    reducer: Reducer = "pca"
    n_components: int = 2
    embedding_columns: tuple[str, ...] | None = None
    sample_size: int | None = DEFAULT_SAMPLE_SIZE
    random_state: int = 0
    subset: Subset = "all"


# -- warm-up -------------------------------------------------------------------------------
@dataclass
class _WarmUp:
    """Whether umap-learn's compiled code is ready in this process (numba compiles once),
    and the job compiling it."""

    ready: threading.Event = field(default_factory=threading.Event)
    job: Job | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def compiling(self) -> bool:
        return self.job is not None and self.job.status in ("queued", "running")


_UMAP = _WarmUp()


def start_warm_up(services: ServiceContext) -> Job | None:
    """Compile UMAP in a background job at server start (about a minute on 2 cores).

    A UMAP landscape requested meanwhile waits for it, saying "preparing UMAP (first
    use)…" (if the warm-up fails or is cancelled, the request compiles UMAP itself).
    Returns ``None`` when UMAP is already compiled or compiling in this process.
    """
    with _UMAP.lock:
        if _UMAP.ready.is_set() or _UMAP.compiling():
            return None

        def compile_umap(progress: Progress) -> dict[str, str]:
            progress.update(0.0, PREPARING_UMAP)
            warm_up("umap", random_state=services.settings.random_state,
                    progress=lambda done, message: progress.update(
                        done, f"{PREPARING_UMAP} compiling on synthetic data: {message}"))
            _UMAP.ready.set()
            return {"reducer": "umap", "status": "compiled"}

        model = cost_model("lce")
        estimate = CostEstimate(model.coefficients.get("umap_compile", 0.0),
                                "compiling UMAP's code on synthetic data", spread=model.spread)
        _UMAP.job = services.jobs.submit("umap_warm_up", compile_umap,
                                         params={"reducer": "umap"},
                                         estimate=estimate.as_dict())
        return _UMAP.job


def umap_status() -> str:
    """``ready`` once UMAP is compiled in this process, ``compiling`` while the warm-up
    runs, else ``not compiled`` (the first UMAP request compiles it)."""
    if _UMAP.ready.is_set():
        return "ready"
    return "compiling" if _UMAP.compiling() else "not compiled"


def _wait_for_umap(progress: Progress, start: float) -> None:
    """Wait for the warm-up job, saying what it does (its stage and percentage)."""
    while (job := _UMAP.job) is not None and _UMAP.compiling() and not _UMAP.ready.wait(0.5):
        progress.update(start, f"{job.progress.message} — warm-up "
                               f"{job.progress.fraction:.0%}")


# -- keyed locks: identical requests running at once compute once --------------------------
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@contextmanager
def locked(key: str) -> Iterator[None]:
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        yield


# -- validation ----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ChosenRows:
    """A dataset's prediction set and the positions of the rows the LCE is computed on."""

    prediction_set: PredictionSet
    positions: NDArray[np.intp]


def _feature_columns(prediction_set: PredictionSet,
                     requested: tuple[str, ...] | None, role: str) -> tuple[str, ...]:
    available = tuple(str(c) for c in prediction_set.features.columns)
    if not available:
        raise CalibrationInputError(
            "this dataset has no feature columns; local calibration measures distances between "
            "rows in feature space (upload the features beside the predictions).",
            code="no_features")
    if requested is None:
        return available
    if len(requested) == 0:
        raise CalibrationInputError(f"choose at least one {role} column.",
                                    code="invalid_parameters")
    unknown = [name for name in requested if name not in available]
    if unknown:
        raise CalibrationInputError(
            f"no feature column named {', '.join(map(repr, unknown))}; this dataset's feature "
            f"columns are {', '.join(map(repr, available[:40]))}.",
            code="unknown_feature", column=str(unknown[0]))
    return tuple(dict.fromkeys(requested))


def resolve_representation(prediction_set: PredictionSet,
                           params: RepresentationParams) -> RepresentationParams:
    """The parameters with the feature list made explicit; bad combinations are input errors."""
    if params.reducer == "columns":
        if not params.embedding_columns:
            raise CalibrationInputError(
                'reducer "columns" uses embedding columns you supply: give "embedding_columns" '
                "(numeric feature columns holding an embedding, e.g. a UMAP you computed).",
                code="missing_embedding_columns")
        columns = _feature_columns(prediction_set, params.embedding_columns, "embedding")
        text = [c for c in columns if prediction_set.feature_kinds.get(c) != "numeric"]
        if text:
            raise CalibrationInputError(
                f"embedding columns must be numeric; {', '.join(map(repr, text))} "
                f"{'is' if len(text) == 1 else 'are'} not.",
                code="non_numeric_embedding", column=text[0])
        return replace(params, features=columns, embedding_columns=columns)
    if params.embedding_columns:
        raise CalibrationInputError(
            f'"embedding_columns" are only used with reducer "columns" (got reducer '
            f'"{params.reducer}"); use "features" to choose the columns to embed.',
            code="invalid_parameters")
    if params.reducer in ("tsne", "umap") and params.n_components not in (2, 3):
        raise CalibrationInputError(
            f"{params.reducer} makes 2-D or 3-D maps; n_components={params.n_components}.",
            code="invalid_parameters")
    return replace(params, features=_feature_columns(prediction_set, params.features, "feature"))


def choose_rows(prediction_set: PredictionSet,
                params: RepresentationParams) -> tuple[RepresentationParams, ChosenRows]:
    """The parameters made explicit and the rows they select; input errors raised now."""
    representation = resolve_representation(prediction_set, params)
    positions = np.flatnonzero(rows_for(prediction_set, representation.subset))
    if positions.size < 2:
        raise CalibrationInputError(
            f"the {representation.subset} rows number {positions.size}; local calibration "
            "needs at least 2.", code="too_few_rows")
    return representation, ChosenRows(prediction_set, positions)


def embedding_terms(store: Store, dataset_id: str, rows: ChosenRows,
                    representation: RepresentationParams) -> dict[str, float]:
    """The work of building phi, counted before starting (see
    :class:`app.services.cost.CostModel`): none when it is cached; the rows encoded and
    reduced, and their cells (rows x feature columns); the rows t-SNE or UMAP is fitted
    on and the rows UMAP's transform places (up to ``UMAP_TRANSFORM_ROWS``; beyond, rows
    are placed by nearest sample rows, nearly free); and UMAP's first compile in a
    process."""
    if store.has_document(embedding_key(dataset_id, representation)):
        return {}
    n_rows = int(rows.positions.size)
    fitted = min(representation.sample_size or n_rows, n_rows)
    placed = n_rows - fitted
    n_columns = len(representation.features or rows.prediction_set.features.columns)
    terms = {"embed_rows": float(n_rows), "embed_cells": float(n_rows * n_columns)}
    if representation.reducer == "tsne":
        terms["tsne_fits"], terms["tsne_rows"] = 1.0, float(fitted)
    if representation.reducer == "umap":
        terms["umap_fits"], terms["umap_rows"] = 1.0, float(fitted)
        terms["umap_placed_rows"] = float(placed if placed <= UMAP_TRANSFORM_ROWS else 0)
        terms["umap_compile"] = 0.0 if _UMAP.ready.is_set() else 1.0
    return terms


def estimate_embedding(store: Store, dataset_id: str, prediction_set: PredictionSet,
                       params: RepresentationParams,
                       more: Callable[[RepresentationParams, ChosenRows], dict[str, float]]
                       = lambda representation, rows: {}) -> CostEstimate:
    """Seconds of a Local job, before starting: :func:`embedding_terms` plus ``more``
    (the job's own terms) times the fitted ``lce`` model. t-SNE and UMAP cost seconds
    per fitted row; PCA and given columns are quick."""
    representation, rows = choose_rows(prediction_set, params)
    n_rows = int(rows.positions.size)
    model = cost_model("lce")

    def terms(option: RepresentationParams) -> dict[str, float]:
        return {"fixed": 1.0, **embedding_terms(store, dataset_id, rows, option),
                **more(option, rows)}

    estimate = model.estimate(terms(representation), "")
    if store.has_document(embedding_key(dataset_id, representation)):
        return replace(estimate, basis=f"this representation of {n_rows:,} rows is cached")
    fitted = min(representation.sample_size or n_rows, n_rows)
    name = {"umap": "UMAP", "tsne": "t-SNE"}.get(representation.reducer)
    if name is None:
        return replace(estimate, basis=f"{representation.reducer} of {n_rows:,} rows")
    basis = f"{name} fitted on {fitted:,} of {n_rows:,} rows"
    if representation.reducer == "umap" and not _UMAP.ready.is_set():
        basis += ", plus about a minute compiling UMAP on first use"
    pca = model.estimate(terms(replace(representation, reducer="pca")), "").text()
    cheaper = f"PCA instead: {pca}"
    if fitted > CHEAPER_SAMPLE:
        smaller = model.estimate(terms(replace(representation, sample_size=CHEAPER_SAMPLE)),
                                 "").text()
        cheaper = (f"fit {name} on {CHEAPER_SAMPLE:,} rows (the others are placed): "
                   f"{smaller}; or PCA: {pca}")
    return replace(estimate, basis=basis, cheaper=cheaper)


# -- the embedding, cached -----------------------------------------------------------------
def embedding_key(dataset_id: str, params: RepresentationParams) -> str:
    """``<dataset_id>.lce-embedding.<hash>``: the table and document of one embedding."""
    return cache_key(dataset_id, "lce-embedding", version=CACHE_VERSION, **asdict(params))


@dataclass(frozen=True, eq=False)
class StoredEmbedding:
    """phi and the 2-D map of the chosen rows, and how they were made (JSON-able)."""

    coordinates: NDArray[np.float64]
    map_2d: NDArray[np.float64]
    about: dict[str, Any]
    cached: bool


def _about(embedding: Embedding) -> dict[str, Any]:
    return {"reducer": embedding.reducer, "dimension": embedding.dimension,
            "columns": list(embedding.columns), "n_encoded": len(embedding.encoded_names),
            "fitted_rows": embedding.fitted_rows, "placement": embedding.placement,
            "imputed": [list(item) for item in embedding.imputed],
            "map_source": embedding.map_source, "notes": list(embedding.notes)}


def _compute_embedding(rows: ChosenRows, params: RepresentationParams,
                       report: Callable[[float, str], None]) -> Embedding:
    table = rows.prediction_set.features.iloc[rows.positions].reset_index(drop=True)
    reducer = params.reducer
    first_use = reducer == "umap" and not _UMAP.ready.is_set()

    def embedding_progress(fraction: float, message: str) -> None:
        report(fraction, f"{PREPARING_UMAP} {message}" if first_use and fraction < 0.4
               else message)

    embedding = embed(table, columns=list(params.features or ()), reducer=reducer,
                      n_components=params.n_components, sample_size=params.sample_size,
                      random_state=params.random_state, progress=embedding_progress)
    if reducer == "umap":
        _UMAP.ready.set()
    return embedding


def cached_embedding(store: Store, dataset_id: str, rows: ChosenRows,
                     params: RepresentationParams, progress: Progress,
                     span: tuple[float, float]) -> StoredEmbedding:
    """phi of ``rows`` from the cache, or computed (progress from ``span[0]`` to ``span[1]``)
    and cached."""
    key = embedding_key(dataset_id, params)
    start, stop = span
    with locked(key):
        if store.has_document(key):
            frame = store.read_table(key)
            about = store.read_document(key)
            phi = frame[[c for c in frame.columns if c.startswith("phi_")]].to_numpy()
            progress.update(stop, "loaded the cached embedding")
            return StoredEmbedding(phi, frame[["map_x", "map_y"]].to_numpy(), about, True)
        if params.reducer == "umap" and not _UMAP.ready.is_set():
            _wait_for_umap(progress, start)

        def report(fraction: float, message: str) -> None:
            progress.update(start + (stop - start) * fraction, f"embedding: {message}")

        embedding = _compute_embedding(rows, params, report)
        frame = pd.DataFrame(embedding.coordinates,
                             columns=[f"phi_{j}" for j in range(embedding.dimension)])
        frame["map_x"], frame["map_y"] = embedding.map_2d[:, 0], embedding.map_2d[:, 1]
        about = jsonable(_about(embedding))
        store.write_table(key, frame)
        store.write_document(key, about)  # written last: its presence means "complete"
    return StoredEmbedding(embedding.coordinates, embedding.map_2d, about, False)
