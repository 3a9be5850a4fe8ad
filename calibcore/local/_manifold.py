"""t-SNE and UMAP maps fitted on a sample, and placing the other rows (see
:mod:`calibcore.local.embedding`, which documents the options)."""

from __future__ import annotations

import re
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from calibcore._progress import INTERVAL, Heartbeat
from calibcore.exceptions import CalibrationInputError
from calibcore.local._encoding import Representation

#: ``progress(fraction, message)`` with a fraction in [0, 1].
Progress = Callable[[float, str], None]
Placement = Literal["auto", "transform", "graph", "neighbors"]

#: Sample rows whose map positions are averaged to place a row (``"neighbors"``).
PLACEMENT_NEIGHBORS = 10
#: Rows per call of UMAP's transform (progress is reported between calls).
TRANSFORM_CHUNK = 50_000
#: ``placement="auto"`` uses UMAP's full transform up to this many rows outside the
#: sample, and the neighbour placement (``"neighbors"``) beyond.
UMAP_TRANSFORM_ROWS = 50_000
#: Fewest rows a t-SNE or UMAP fit accepts.
MIN_MANIFOLD_ROWS = 10


@dataclass(frozen=True, eq=False)
class ReducerInput:
    """What a reducer runner needs: encoded rows, the sample, options, notes to add to."""

    encoded: NDArray[np.float64]
    base: Representation
    sample: NDArray[np.intp]
    n_components: int
    placement: Placement
    random_state: int
    notes: list[str]
    report: Progress


@dataclass(frozen=True, eq=False)
class ReducerOutput:
    """Kernel-space coordinates of every row and how rows outside the sample got them."""

    coordinates: NDArray[np.float64]
    placement: Literal["transform", "graph", "neighbors"]
    representation: Representation | None


def _manifold_components(step: ReducerInput, name: str) -> int:
    if step.n_components not in (2, 3):
        raise CalibrationInputError(
            f"{name} makes 2-D or 3-D maps; n_components={step.n_components!r}."
        )
    if step.sample.size < MIN_MANIFOLD_ROWS:
        raise CalibrationInputError(
            f"{name} needs at least {MIN_MANIFOLD_ROWS} rows to fit; got {step.sample.size}."
        )
    return int(step.n_components)


def tsne(step: ReducerInput) -> ReducerOutput:
    from sklearn.manifold import TSNE

    n_components = _manifold_components(step, "t-SNE")
    n_fit = step.sample.size
    perplexity = min(30.0, (n_fit - 1) / 3.0)
    model = TSNE(n_components=n_components, perplexity=perplexity, init="pca",
                 learning_rate="auto", random_state=step.random_state)
    fitted = _quietly(lambda: model.fit_transform(step.encoded[step.sample]), step.notes)
    coordinates = np.asarray(fitted, dtype=np.float64)
    if n_fit < step.encoded.shape[0]:
        if step.placement in ("transform", "graph"):
            step.notes.append("t-SNE has no transform: the other rows were placed by neighbours.")
        return ReducerOutput(_place_by_neighbors(step, coordinates), "neighbors", None)
    return ReducerOutput(coordinates, "neighbors", None)


def umap_map(step: ReducerInput) -> ReducerOutput:
    n_components = _manifold_components(step, "UMAP")
    umap = _import_umap()
    from tqdm.auto import tqdm  # the progress bar umap-learn uses

    n_fit = step.sample.size
    heartbeat = Heartbeat(step.report, 0.05, "fitting umap")
    lock = tqdm.get_lock()
    epochs = _EpochReports(heartbeat, lock, start=0.05, stop=0.4)
    model = umap.UMAP(n_components=n_components, n_neighbors=min(15, n_fit - 1),
                      random_state=step.random_state, n_jobs=1, tqdm_kwds=epochs.tqdm_kwds())
    # One BLAS thread: the spectral initialization (ARPACK) makes hundreds of small BLAS
    # calls, which a second thread only slows down (23 s instead of 1.5 s for 20,000
    # rows on 2 busy cores), and whose rounding, hence the map, would depend on it.
    # umap-learn reports nothing until its layout epochs start (the neighbour graph and
    # the spectral initialization can take minutes on large samples): say which stage runs
    heartbeat.now(0.05, f"UMAP: neighbour graph and initial layout of {n_fit:,} rows "
                        "(the progress moves again once the layout is optimized)")
    with threadpool_limits(limits=1, user_api="blas"):
        fitted = _quietly(lambda: model.fit_transform(step.encoded[step.sample]), step.notes)
    sample_map = np.asarray(fitted, dtype=np.float64)
    n_rest = step.encoded.shape[0] - n_fit
    if n_rest == 0:
        return ReducerOutput(sample_map, "transform", None)
    placement = step.placement
    if placement == "auto":
        placement = "transform" if n_rest <= UMAP_TRANSFORM_ROWS else "neighbors"
    if placement == "neighbors":
        index = getattr(model, "_knn_search_index", None)  # from 4,096 fitted rows on
        return ReducerOutput(_place_by_neighbors(step, sample_map, index), "neighbors", None)
    rest = np.setdiff1d(np.arange(step.encoded.shape[0]), step.sample, assume_unique=True)
    coordinates = np.empty((step.encoded.shape[0], n_components))
    coordinates[step.sample] = sample_map
    # New rows are placed independently of each other (UMAP moves only them, against the
    # fitted map), so chunks change nothing but allow progress reports and bound memory.
    for start in range(0, rest.size, TRANSFORM_CHUNK):
        chunk = rest[start:start + TRANSFORM_CHUNK]
        low, high = 0.4 + 0.5 * start / rest.size, 0.4 + 0.5 * (start + chunk.size) / rest.size
        heartbeat.now(low, f"UMAP {placement}: {start:,} of {rest.size:,} rows placed")
        model.set_params(
            tqdm_kwds=_EpochReports(heartbeat, lock, start=low, stop=high).tqdm_kwds())
        place = _umap_transform if placement == "transform" else _umap_graph_mean
        with threadpool_limits(limits=1, user_api="blas"):
            coordinates[chunk] = _quietly(partial(place, model, step.encoded[chunk]),
                                          step.notes)
    if placement == "graph":
        step.notes.append(
            f"{n_rest:,} rows outside the sample were placed at the mean map position of "
            "their UMAP neighbours in the sample, weighted by UMAP's membership strengths "
            "(UMAP's transform without its refinement epochs)."
        )
    return ReducerOutput(coordinates, placement, None)


def _import_umap() -> Any:
    """umap-learn, imported without its ImportWarning about the absent TensorFlow extra.

    Warning filters are process-wide and ``catch_warnings`` is not thread-safe: another
    thread leaving its own ``catch_warnings`` (a web request building a schema, say)
    can restore the filters between ours being set and umap-learn warning, so that
    warnings-as-errors turns the warning into an exception. The import is then
    retried (a failed import leaves nothing behind in ``sys.modules``).
    """
    for _ in range(2):
        try:
            return _import_umap_quietly()
        except ImportWarning:
            continue
    return _import_umap_quietly()


def _import_umap_quietly() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportWarning)
        import umap  # heavy (numba), so only when asked for
    _cache_compiled_code(("umap", "pynndescent"))
    return umap


#: Packages whose jitted functions cache to disk already (set once, under the lock).
_CACHED: set[str] = set()
_CACHING_LOCK = threading.Lock()


def _cache_compiled_code(packages: tuple[str, ...]) -> None:
    """Turn on numba's on-disk cache for the jitted functions of ``packages``.

    umap-learn declares most of its ~250 numba functions without ``cache=True``, so
    every process compiled them again: 11 s before a 1,500-row map, ~35 s with the
    approximate-neighbour path. ``enable_caching`` is what ``cache=True`` does; the
    compiled code is then written beside the package (or in the user's cache
    directory when that is read-only), and later processes load it: 11 s -> 3 s.
    pynndescent's functions made at run time (per metric) still compile each time.
    """
    from numba.core.dispatcher import Dispatcher

    with _CACHING_LOCK:
        if _CACHED.issuperset(packages):
            return
        _CACHED.update(packages)
        for name, module in list(sys.modules.items()):
            if module is None or name.partition(".")[0] not in packages:
                continue
            for value in list(vars(module).values()):
                if isinstance(value, Dispatcher):
                    value.enable_caching()


class _EpochReports:
    """Where UMAP's epoch progress bar "writes": each refresh of the bar is a heartbeat.

    umap-learn optimizes the layout in a Python loop over epochs wrapped in a tqdm
    bar; pointing the bar at this object (refreshed every :data:`INTERVAL` s) reports
    the epochs done, mapped to ``start``..``stop``, and lets a cancelling callback
    raise between epochs. Nothing is printed and the computation is untouched.

    tqdm writes a refresh holding its (process-wide, reentrant) write lock, which it
    releases only if the write returns; so when the callback raises, the lock is
    released here first, or the next progress bar in another thread would wait for
    ever. Writes without counts (those of ``close``, under a ``with`` block) never
    call the callback.
    """

    _COUNTS = re.compile(r"(\d+)/(\d+)")

    def __init__(self, heartbeat: Heartbeat, lock: Any, *, start: float, stop: float) -> None:
        self._heartbeat = heartbeat
        self._lock = lock
        self._start = start
        self._stop = stop

    def tqdm_kwds(self) -> dict[str, Any]:
        return {"disable": False, "file": self, "mininterval": INTERVAL, "leave": False,
                "bar_format": "{n}/{total}"}

    def write(self, text: str) -> int:
        counts = self._COUNTS.search(text)
        if counts is not None:  # a refresh, written holding tqdm's lock
            done, total = int(counts[1]), max(int(counts[2]), 1)
            try:
                self._heartbeat(self._start + (self._stop - self._start) * done / total,
                                f"UMAP: epoch {done} of {total}")
            except BaseException:
                self._lock.release()
                raise
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""


def _umap_transform(model: Any, rows: NDArray[np.float64]) -> NDArray[np.float64]:
    model.set_params(transform_mode="embedding")
    return np.asarray(model.transform(rows), dtype=np.float64)


def _umap_graph_mean(model: Any, rows: NDArray[np.float64]) -> NDArray[np.float64]:
    """Membership-weighted mean of the sample's map (UMAP's initial placement of new rows)."""
    model.set_params(transform_mode="graph")
    graph = model.transform(rows).tocsr()
    totals = np.asarray(graph.sum(axis=1)).ravel()
    placed = np.empty((rows.shape[0], model.embedding_.shape[1]))
    linked = totals > 0
    placed[linked] = (graph[linked] @ model.embedding_) / totals[linked, None]
    if not linked.all():  # no neighbour within reach: UMAP's full transform decides
        placed[~linked] = _umap_transform(model, rows[~linked])
    return placed


def _quietly(function: Callable[[], Any], notes: list[str]) -> Any:
    """Run a third-party fit, turning its warnings into notes rather than output."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function()
    for message in dict.fromkeys(str(w.message).strip() for w in caught):
        notes.append(f"reducer warning: {message}")
    return result


def _place_by_neighbors(
    step: ReducerInput, sample_map: NDArray[np.float64], search_index: Any = None
) -> NDArray[np.float64]:
    """Sample rows keep their map; the others get the mean map of their nearest sample rows.

    The nearest :data:`PLACEMENT_NEIGHBORS` sample rows are by Euclidean distance in the
    encoded feature space: found exactly (scikit-learn), or by ``search_index`` when
    given (UMAP's fitted pynndescent index, whose answers are approximate: ~97% of the
    exact neighbours on the 300k-row benchmark, at a fifth of the time). Rows are
    searched in fixed chunks of :data:`TRANSFORM_CHUNK` (the approximate search depends
    on the batch it is given, so fixed chunks keep the result deterministic), with
    progress reported between chunks.
    """
    n_rows = step.encoded.shape[0]
    coordinates = np.empty((n_rows, sample_map.shape[1]))
    coordinates[step.sample] = sample_map
    rest = np.setdiff1d(np.arange(n_rows), step.sample, assume_unique=True)
    k = min(PLACEMENT_NEIGHBORS, step.sample.size)
    if search_index is None:
        from sklearn.neighbors import NearestNeighbors

        search_index = _ExactSearch(NearestNeighbors(n_neighbors=k).fit(step.encoded[step.sample]))
    heartbeat = Heartbeat(step.report, 0.5, "placing the other rows by nearest sample rows")
    for start in range(0, rest.size, TRANSFORM_CHUNK):
        chunk = rest[start:start + TRANSFORM_CHUNK]
        heartbeat.now(0.5 + 0.45 * start / rest.size,
                      f"placing the other rows by nearest sample rows: {start:,} of "
                      f"{rest.size:,}")
        with threadpool_limits(limits=1, user_api="blas"):
            neighbors, _ = search_index.query(step.encoded[chunk], k=k)
        coordinates[chunk] = sample_map[np.asarray(neighbors, dtype=np.intp)].mean(axis=1)
    how = "exact" if isinstance(search_index, _ExactSearch) else (
        "found by UMAP's own nearest-neighbour index, approximate")
    step.notes.append(
        f"{rest.size:,} rows outside the sample were placed at the mean map position of "
        f"their {k} nearest sample rows (Euclidean, encoded features; {how})."
    )
    return coordinates


@dataclass(frozen=True)
class _ExactSearch:
    """scikit-learn's exact neighbours behind pynndescent's ``query(rows, k)`` signature."""

    index: Any

    def query(self, rows: NDArray[np.float64], k: int) -> tuple[NDArray[np.intp], None]:
        _, neighbors = self.index.kneighbors(rows, n_neighbors=k)
        return np.asarray(neighbors, dtype=np.intp), None
