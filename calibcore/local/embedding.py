"""The representation phi on which local calibration is measured (Luo et al. 2022, §3.2).

Chosen feature columns are encoded (numeric columns standardized, categorical
columns one-hot, missing values imputed and counted; see
:mod:`calibcore.local._encoding`) and then reduced:

* ``"none"``: the encoded features themselves;
* ``"pca"``: their first k principal components;
* ``"tsne"`` / ``"umap"``: a 2-D or 3-D t-SNE (scikit-learn) or UMAP (umap-learn) map;
* ``"columns"``: the chosen columns already are an embedding and are used as given
  (numeric, not standardized).

Large tables: the reducer is fitted on a seeded sample of ``sample_size`` rows
and the other rows are *placed*:

* ``"transform"``: by the fitted reducer (PCA's projection, UMAP's ``transform``);
* ``"graph"`` (UMAP): at the mean map position of the row's UMAP neighbours in
  the sample, weighted by UMAP's membership strengths. This is where UMAP's
  transform starts before its refinement epochs; it moves points little and
  is several times faster (umap-learn builds that start row by row in Python);
* ``"neighbors"``: at the mean map position of the :data:`PLACEMENT_NEIGHBORS`
  nearest sample rows in the encoded feature space (Euclidean). For UMAP the
  neighbours come from UMAP's own fitted nearest-neighbour index (pynndescent,
  approximate: ~97% of the exact ones; exact below 4,096 fitted rows, where UMAP
  has no index), which makes it the cheapest placement (about 2 s for 280,000
  rows); elsewhere they are exact (scikit-learn). t-SNE has no out-of-sample
  map, so it always uses this. A row of the sample placed this way lands at the
  mean of itself and its 9 nearest sample rows, i.e. near its fitted position
  (tested).

The result records what was done.

The encoding and PCA (:class:`~calibcore.local.Representation`) are plain
arrays and serialize to JSON, so LoRe carries its fitted pipeline; UMAP and
t-SNE models are neither serializable nor deterministic across library
versions, and serve diagnostics only.

A 2-D map for display is always available: the kernel space itself when it is
2-D, its first two principal components for PCA, otherwise PCA(2) of the
kernel space (a 1-D space is drawn against a zero axis).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.local._encoding import (
    FeatureTable,
    Representation,
    as_table,
    fit_representation,
    principal_axes,
)
from calibcore.local._manifold import (
    PLACEMENT_NEIGHBORS,
    UMAP_TRANSFORM_ROWS,
    Placement,
    Progress,
    ReducerInput,
    ReducerOutput,
    tsne,
    umap_map,
)

Reducer = Literal["none", "pca", "tsne", "umap", "columns"]

REDUCERS: tuple[Reducer, ...] = ("none", "pca", "tsne", "umap", "columns")
PLACEMENTS: tuple[Placement, ...] = ("auto", "transform", "graph", "neighbors")
DEFAULT_SAMPLE_SIZE = 20_000

__all__ = [
    "DEFAULT_SAMPLE_SIZE",
    "PLACEMENTS",
    "PLACEMENT_NEIGHBORS",
    "REDUCERS",
    "UMAP_TRANSFORM_ROWS",
    "Embedding",
    "Representation",
    "embed",
    "fit_representation",
    "warm_up",
]


@dataclass(frozen=True, eq=False)
class Embedding:
    """Coordinates of every row in the kernel space phi, and how they were made.

    Attributes
    ----------
    coordinates : ndarray of shape (n, d)
        The kernel space phi(x) used by the LCE.
    map_2d : ndarray of shape (n, 2)
        Positions for display (see the module docstring).
    reducer : str
        One of :data:`REDUCERS`.
    columns : tuple of str
        Feature columns used.
    encoded_names : tuple of str
        Columns after encoding (one-hot columns as ``"column=value"``).
    fitted_rows : int
        Rows the reducer was fitted on (``n`` when no sample was drawn).
    placement : {"all", "transform", "graph", "neighbors"}
        How rows outside the fitted sample got coordinates (``"all"``: there were none).
    imputed : tuple of (str, int)
        Feature columns with missing values and how many were imputed.
    map_source : str
        What ``map_2d`` is.
    notes : tuple of str
        Every choice made on the user's behalf, in words.
    representation : Representation or None
        The serializable pipeline (``None`` for t-SNE and UMAP).
    """

    coordinates: NDArray[np.float64]
    map_2d: NDArray[np.float64]
    reducer: Reducer
    columns: tuple[str, ...]
    encoded_names: tuple[str, ...]
    fitted_rows: int
    placement: Literal["all", "transform", "graph", "neighbors"]
    imputed: tuple[tuple[str, int], ...]
    map_source: str
    notes: tuple[str, ...]
    representation: Representation | None

    @property
    def n_rows(self) -> int:
        """Number of rows embedded."""
        return int(self.coordinates.shape[0])

    @property
    def dimension(self) -> int:
        """Dimension d of the kernel space."""
        return int(self.coordinates.shape[1])

    @property
    def sampled(self) -> bool:
        """Whether the reducer was fitted on a sample of the rows."""
        return self.fitted_rows < self.n_rows


def embed(
    features: FeatureTable | ArrayLike,
    *,
    columns: list[str] | None = None,
    categorical: list[str] | None = None,
    reducer: Reducer = "pca",
    n_components: int = 2,
    sample_size: int | None = DEFAULT_SAMPLE_SIZE,
    placement: Placement = "auto",
    random_state: int = 0,
    progress: Progress | None = None,
) -> Embedding:
    """Build the kernel space phi (and a 2-D display map) from feature columns.

    Parameters
    ----------
    features : DataFrame or array-like of shape (n, p)
        The feature table (arrays get columns ``x0, x1, ...``).
    columns : list of str, optional
        Columns to use (default: all).
    categorical : list of str, optional
        Columns to one-hot even though they are numeric (e.g. integer codes);
        non-numeric and boolean columns always are.
    reducer : {"none", "pca", "tsne", "umap", "columns"}, default="pca"
        See the module docstring.
    n_components : int, default=2
        Output dimension of PCA (clipped to what the data allow), t-SNE and UMAP (2 or 3).
    sample_size : int or None, default=20000
        Fit the reducer on this many seeded rows when the table is larger;
        ``None`` fits on every row.
    placement : {"auto", "transform", "graph", "neighbors"}, default="auto"
        How rows outside the sample are placed (see the module docstring);
        ``"auto"``: PCA's projection; UMAP's transform up to
        :data:`UMAP_TRANSFORM_ROWS` rows, ``"neighbors"`` beyond; neighbours for t-SNE.
    random_state : int, default=0
        Seeds the sample, t-SNE and UMAP.
    progress : callable, optional
        ``progress(fraction, message)``.

    Returns
    -------
    Embedding
    """
    report = progress or _ignore_progress
    runner = _check_reducer(reducer)
    if placement not in PLACEMENTS:
        raise CalibrationInputError(
            f"placement must be one of {', '.join(PLACEMENTS)}; got {placement!r}."
        )
    if sample_size is not None:
        sample_size = check_positive_int(sample_size, "sample_size", minimum=2)
    table = as_table(features)
    report(0.0, "encoding features")
    base = fit_representation(
        table, columns=columns, categorical=categorical,
        reducer="columns" if reducer == "columns" else "none",
    )
    encoded = base.transform(table)
    sample = _sample_rows(encoded.shape[0], sample_size, random_state)
    notes = list(base.notes)
    fits = reducer in ("pca", "tsne", "umap")
    if sample.size < encoded.shape[0]:
        fitted = reducer if fits else "the PCA of the 2-D map"
        notes.append(
            f"{fitted} was fitted on a seeded sample of {sample.size:,} of "
            f"{encoded.shape[0]:,} rows (random_state={random_state})."
        )
    report(0.05, f"fitting {reducer}")
    result = runner(
        ReducerInput(encoded, base, sample, n_components, placement, random_state, notes, report)
    )
    report(0.95, "building the 2-D map")
    map_2d, map_source = _display_map(result.coordinates, reducer, sample)
    report(1.0, "embedding done")
    return Embedding(
        coordinates=result.coordinates,
        map_2d=map_2d,
        reducer=reducer,
        columns=base.columns,
        encoded_names=base.encoded_names,
        fitted_rows=int(sample.size) if fits else encoded.shape[0],
        placement=result.placement if fits and sample.size < encoded.shape[0] else "all",
        imputed=base.imputed,
        map_source=map_source,
        notes=tuple(notes),
        representation=result.representation,
    )


def warm_up(reducer: Reducer = "umap", *, random_state: int = 0,
            progress: Progress | None = None) -> None:
    """Compile a reducer's numba code ahead of the first real request.

    umap-learn compiles much of its code on first use in each process (about a
    minute on 2 cores), including the approximate nearest-neighbour path used from
    4,096 rows on and the exact one below; this embeds 6,000 synthetic rows, fitting
    on 5,000, then 1,000 rows, so that a server can pay that cost at start-up in the
    background (compiling cannot be interrupted, so a job that compiled would not
    stop promptly when cancelled). ``progress(fraction, message)`` hears both embeddings'
    stages (the compiling itself reports nothing).
    """
    report = progress or _ignore_progress
    rng = np.random.default_rng(random_state)
    centers = rng.normal(size=(4, 5)) * 5
    data = centers[rng.integers(0, 4, size=6_000)] + rng.normal(size=(6_000, 5))
    embed(data, reducer=reducer, sample_size=5_000, random_state=random_state,
          progress=lambda done, message: report(0.8 * done, f"{message} (6,000 rows)"))
    embed(data[:1_000], reducer=reducer, sample_size=None, random_state=random_state,
          progress=lambda done, message: report(0.8 + 0.2 * done, f"{message} (1,000 rows)"))


def _ignore_progress(fraction: float, message: str) -> None:
    """Default progress callback: report nothing."""


def _sample_rows(n_rows: int, sample_size: int | None, random_state: int) -> NDArray[np.intp]:
    if sample_size is None or n_rows <= sample_size:
        return np.arange(n_rows)
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(n_rows, size=sample_size, replace=False))


def _identity(step: ReducerInput) -> ReducerOutput:
    return ReducerOutput(step.encoded, "transform", step.base)


def _pca(step: ReducerInput) -> ReducerOutput:
    n_components = check_positive_int(step.n_components, "n_components")
    representation = step.base.with_pca(step.encoded[step.sample], n_components)
    step.notes.append(representation.notes[-1])
    if representation.dimension < n_components:
        step.notes.append(
            f"PCA keeps {representation.dimension} components: the encoded features "
            f"vary in no more directions (asked for {n_components})."
        )
    if step.placement in ("graph", "neighbors"):
        step.notes.append("placement ignored: PCA projects every row.")
    return ReducerOutput(representation.project(step.encoded), "transform", representation)


_RUNNERS: dict[Reducer, Callable[[ReducerInput], ReducerOutput]] = {
    "none": _identity,
    "columns": _identity,
    "pca": _pca,
    "tsne": tsne,
    "umap": umap_map,
}


def _check_reducer(reducer: str) -> Callable[[ReducerInput], ReducerOutput]:
    try:
        return _RUNNERS[reducer]  # type: ignore[index]
    except KeyError:
        raise CalibrationInputError(
            f"reducer must be one of {', '.join(REDUCERS)}; got {reducer!r}."
        ) from None


def _display_map(
    coordinates: NDArray[np.float64], reducer: Reducer, sample: NDArray[np.intp]
) -> tuple[NDArray[np.float64], str]:
    dimension = coordinates.shape[1]
    if dimension == 1:
        return np.column_stack([coordinates[:, 0], np.zeros(coordinates.shape[0])]), (
            "the 1-D kernel space against a zero axis"
        )
    if dimension == 2:
        return coordinates.copy(), "the kernel space itself"
    if reducer == "pca":
        return coordinates[:, :2].copy(), "the first two principal components"
    mean, axes = principal_axes(coordinates[sample], 2)
    projected = np.zeros((coordinates.shape[0], 2))
    projected[:, : axes.shape[0]] = (coordinates - mean) @ axes.T
    return projected, "PCA(2) of the kernel space"
