"""Hidden heterogeneity (HH) of a stored dataset, as a background job (Wagstaff & Dietterich 2023).

HH_t is computed for test rows (a seeded sample of them by default: it grows
100 trees x 7 pruning levels per distinct probability neighbourhood) against
the calibration rows. The forests need complete numeric features, so the
chosen feature columns are encoded as the Local page encodes them (numeric
standardized, text one-hot, missing values imputed); the 2-D map of the heatmap
is the Local page's pipeline (:func:`calibcore.local.embed`, PCA(2)).

Results are cached per parameter set under ``<dataset_id>.hh.<hash>`` and the
per-row values are saved as the ``hh`` row column (NaN for rows not evaluated). The
result's ``recommendation`` is made when the job runs, not cached: it rests on the
held-out comparison of the recalibrators stored for the dataset when there are any
(:func:`app.services.calibration_advice.advise`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from app.jobs import Job, Progress
from app.services.calibration_advice import advise
from app.services.cost import CostEstimate, cost_model
from app.services.jsonable import jsonable
from app.services.row_columns import save_row_column
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from app.store import Store
from calibcore.data import PredictionSet
from calibcore.exceptions import CalibrationInputError
from calibcore.heterogeneity import (
    AUTO_GRID_PER_RADIUS,
    MAX_NEIGHBOUR_PAIRS,
    hidden_heterogeneity_details,
    neighbour_counts,
    recommend_calibration,
)
from calibcore.local import Representation, embed, fit_representation

#: Bump when the result document changes shape, so stale caches are not served.
RESULT_VERSION = 2
DEFAULT_SAMPLE = 500
#: Calibration rows the local forests see by default (a seeded sample above): a 300k-row
#: file's 150k calibration rows give 48k-row neighbourhoods, 10 s of forests each.
MAX_CALIBRATION_ROWS = 20_000
#: Rows not evaluated that are drawn (seeded) as grey context on the map.
MAX_BACKGROUND_ROWS = 5_000
#: Rows the map's PCA is fitted on (the rest are projected).
MAP_SAMPLE_ROWS = 20_000
#: Equal-mass bins of confidence for the mean-HH curve.
CONFIDENCE_BINS = 10
#: Centres whose neighbourhoods are counted for an estimate (a seeded sample above).
ESTIMATE_CENTRES = 2_000


@dataclass(frozen=True)
class HeterogeneityParams:
    """What to compute: Hellinger radius, test rows to evaluate, seed, feature columns,
    calibration rows for the forests and the sharing of forests.

    ``sample=None`` evaluates every test row; ``features=None`` uses every feature
    column; ``calibration_sample=None`` uses every calibration row; ``grid`` is
    :func:`calibcore.heterogeneity.hidden_heterogeneity_details`'s (None: exact).
    """

    radius: float = 0.1
    sample: int | None = DEFAULT_SAMPLE
    random_state: int = 0
    features: tuple[str, ...] | None = None
    calibration_sample: int | None = MAX_CALIBRATION_ROWS
    grid: float | Literal["auto"] | None = "auto"


@dataclass(frozen=True)
class RowSplit:
    """Calibration rows and the rows to evaluate, and how they were chosen (in words)."""

    calibration: NDArray[np.intp]
    test: NDArray[np.intp]
    scheme: str


@dataclass(frozen=True, eq=False)
class ForestFeatures:
    """Complete numeric features for the forests, with what was done to get them."""

    columns: tuple[str, ...]
    values: NDArray[np.float64]
    representation: Representation
    notes: tuple[str, ...]


def resolve_columns(prediction_set: PredictionSet,
                    features: tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """The feature columns to use: all of them by default; unknown names are an input error."""
    available = tuple(str(c) for c in prediction_set.features.columns)
    if not available:
        raise CalibrationInputError(
            "this dataset has no feature columns; hidden heterogeneity and calibration support "
            "need the features the model saw (upload them beside the predictions).",
            code="no_features")
    if features is None:
        return available
    if len(features) == 0:
        raise CalibrationInputError("choose at least one feature column.",
                                    code="invalid_parameters")
    unknown = [name for name in features if name not in available]
    if unknown:
        raise CalibrationInputError(
            f"no feature column named {', '.join(map(repr, unknown))}; this dataset's feature "
            f"columns are {', '.join(map(repr, available))}.",
            code="unknown_feature", column=str(unknown[0]))
    return tuple(dict.fromkeys(features))


def forest_features(prediction_set: PredictionSet, columns: tuple[str, ...]) -> ForestFeatures:
    """Encode ``columns`` of every row for the forests (fitted on all rows of the dataset).

    Numeric columns are standardized (trees do not depend on it; PCA for the map
    does), text and boolean columns one-hot encoded, and missing values imputed
    with the median or the most frequent level. Integer-coded columns stay
    numeric: trees split on their order, which one-hot encoding would discard.
    """
    representation = fit_representation(prediction_set.features, columns=list(columns),
                                        reducer="none")
    notes = ("Forest features: numeric columns (integer codes included) standardized, text and "
             "boolean columns one-hot encoded, missing values imputed (median / most frequent "
             f"level); {len(representation.encoded_names)} encoded columns from "
             f"{len(columns)}.", *representation.notes)
    return ForestFeatures(columns=columns, values=representation.transform(prediction_set.features),
                          representation=representation, notes=notes)


def split_rows(prediction_set: PredictionSet, random_state: int) -> RowSplit:
    """Calibration and test rows from the split column, or a seeded half split without one."""
    if prediction_set.split is not None:
        calibration = np.flatnonzero(prediction_set.mask("calibration"))
        test = np.flatnonzero(prediction_set.mask("test"))
        if calibration.size == 0 or test.size == 0:
            missing = "calibration" if calibration.size == 0 else "test"
            raise CalibrationInputError(
                f"the split column {prediction_set.roles.split!r} has no {missing} rows; "
                "HH needs both (or upload without a split column for a seeded half split).",
                code="empty_split", column=prediction_set.roles.split)
        return RowSplit(calibration, test,
                        f"split column: {calibration.size:,} calibration rows, "
                        f"{test.size:,} test rows")
    if prediction_set.n_rows < 4:
        raise CalibrationInputError(
            f"HH needs at least 4 rows to split; this dataset has {prediction_set.n_rows}.",
            code="too_few_rows")
    order = np.random.default_rng(random_state).permutation(prediction_set.n_rows)
    half = prediction_set.n_rows // 2
    calibration, test = np.sort(order[:half]), np.sort(order[half:])
    return RowSplit(calibration, test,
                    f"no split column: a seeded half split (random_state={random_state}) "
                    f"gives {calibration.size:,} calibration rows and {test.size:,} rows to "
                    "evaluate")


def sample_rows(rows: NDArray[np.intp], sample: int | None,
                random_state: int) -> NDArray[np.intp]:
    """A seeded sample of ``sample`` of ``rows`` (sorted), or all of them."""
    if sample is None or sample >= rows.size:
        return rows
    chosen = np.random.default_rng(random_state).choice(rows, size=sample, replace=False)
    return np.sort(chosen)


def params_key(dataset_id: str, topic: str, document: dict[str, Any]) -> str:
    """Store key of a cached result: starts with the dataset id so deleting it removes it."""
    text = json.dumps({"version": RESULT_VERSION, **document}, sort_keys=True, default=str)
    return f"{dataset_id}.{topic}.{hashlib.sha256(text.encode()).hexdigest()[:20]}"


def class_names(prediction_set: PredictionSet, indices: NDArray[np.intp]) -> list[str | None]:
    """Class names of class indices; None for the -1 of an unlabeled batch."""
    return [prediction_set.classes[int(i)] if i >= 0 else None for i in indices]


def row_ids(prediction_set: PredictionSet, rows: NDArray[np.intp]) -> list[Any]:
    """The id column's values of ``rows`` (None when the dataset has no id column)."""
    if prediction_set.ids is None:
        return [None] * int(rows.size)
    return list(jsonable(prediction_set.ids[rows]))


def confidence_bins(confidence: NDArray[np.float64], hh: NDArray[np.float64],
                    n_bins: int = CONFIDENCE_BINS,
                    weights: NDArray[np.float64] | None = None) -> dict[str, Any]:
    """Mean HH in equal-mass bins of confidence, with a normal 95% interval of each mean.

    With ``weights`` the bins hold equal numbers of rows still, and each bin's mean is
    the weighted mean, its interval 1.96 x the weighted standard deviation / sqrt(Kish
    n_eff of the bin)."""
    edges = np.unique(np.quantile(confidence, np.linspace(0.0, 1.0, n_bins + 1)))
    index = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0,
                    max(edges.size - 2, 0))
    bins: dict[str, list[float]] = {"confidence": [], "mean": [], "low": [], "high": [],
                                    "n": []}
    for number in np.unique(index):
        values = hh[index == number]
        if weights is None:
            mean = float(values.mean())
            spread = float(values.std(ddof=1)) if values.size > 1 else 0.0
            half = 1.96 * spread / np.sqrt(values.size)
            centre = float(confidence[index == number].mean())
        else:
            w = weights[index == number]
            mean = float(np.average(values, weights=w)) if w.sum() > 0 else float("nan")
            n_eff = float(w.sum() ** 2 / np.sum(w**2)) if w.sum() > 0 else 0.0
            spread = (float(np.sqrt(np.average((values - mean) ** 2, weights=w)
                                    * n_eff / (n_eff - 1))) if n_eff > 1 else 0.0)
            half = 1.96 * spread / np.sqrt(max(n_eff, 1.0))
            centre = (float(np.average(confidence[index == number], weights=w))
                      if w.sum() > 0 else float(confidence[index == number].mean()))
            if not np.isfinite(mean):
                continue  # a bin of weight 0 stands for nobody
        bins["confidence"].append(centre)
        bins["mean"].append(mean)
        bins["low"].append(max(0.0, mean - half))
        bins["high"].append(mean + half)
        bins["n"].append(int(values.size))
    return bins


def _median(values: NDArray[np.float64], weights: NDArray[np.float64] | None) -> float:
    """The median, or with weights the weighted (inverted-CDF) median: the smallest value
    whose share of the weight at or below it reaches one half."""
    if weights is None:
        return float(np.median(values))
    order = np.argsort(values, kind="stable")
    share = np.cumsum(weights[order]) / np.sum(weights)
    return float(values[order][np.searchsorted(share, 0.5)])


def estimate_heterogeneity(services: ServiceContext, dataset_id: str,
                           params: HeterogeneityParams) -> CostEstimate:
    """Seconds of the HH job, before starting (no forest is grown).

    Counts the distinct neighbourhood centres (the rows' distinct probabilities, or their
    grid points when forests are shared) and the calibration rows around a sample of
    them (:func:`heterogeneity_terms`), times the fitted model; distinct probabilities can
    share a neighbourhood, so this leans high. Evaluating fewer rows or using fewer
    calibration rows is the cheaper setting offered.
    """
    prediction_set = services.datasets.prediction_set(dataset_id)
    columns = resolve_columns(prediction_set, params.features)
    if services.store.has_document(
            params_key(dataset_id, "hh", {**asdict(params), "features": list(columns)})):
        return CostEstimate(0.0, "computed before with these settings: cached")
    model = cost_model("heterogeneity")
    terms, n_centres, rows_each = heterogeneity_terms(prediction_set, params, len(columns))
    seconds = model.seconds(terms)
    basis = (f"up to {n_centres:,} local forests on about {rows_each:,.0f} calibration rows "
             f"each, {len(columns)} feature columns")
    cheaper = None
    for option, words in _cheaper_heterogeneity(params):
        option_terms = heterogeneity_terms(prediction_set, option, len(columns))[0]
        if model.seconds(option_terms) < seconds / 2:
            cheaper = f"{words}: {model.estimate(option_terms, '').text()}"
            break
    return model.estimate(terms, basis, cheaper)


def _cheaper_heterogeneity(params: HeterogeneityParams
                           ) -> list[tuple[HeterogeneityParams, str]]:
    options = []
    if params.sample is None or params.sample > 200:
        options.append((replace(params, sample=200), "evaluate a seeded sample of 200 test rows"))
    if params.calibration_sample is None or params.calibration_sample > 5_000:
        options.append((replace(params, calibration_sample=5_000),
                        "fit the forests on 5,000 calibration rows"))
    options.append((replace(params, radius=params.radius / 2),
                    f"a smaller radius ({params.radius / 2:g}: smaller neighbourhoods)"))
    return options


def heterogeneity_terms(prediction_set: PredictionSet, params: HeterogeneityParams,
                        n_features: int) -> tuple[dict[str, float], int, float]:
    """The work of an HH job counted before starting (see
    :class:`app.services.cost.CostModel`): the local forests (distinct centres), their
    rows (rows x log2(rows) x features, averaged over a sample of centres, and that
    times the features again) and the rows mapped; with the distinct centres and mean
    calibration rows per neighbourhood."""
    rows = split_rows(prediction_set, params.random_state)
    evaluated = sample_rows(rows.test, params.sample, params.random_state)
    calibration = sample_rows(rows.calibration, params.calibration_sample, params.random_state)
    proba_cal, proba = prediction_set.proba[calibration], prediction_set.proba[evaluated]
    grid = None if params.grid == "auto" else params.grid
    rng = np.random.default_rng(params.random_state)
    if params.grid == "auto":
        probe = proba[rng.choice(proba.shape[0], min(ESTIMATE_CENTRES, proba.shape[0]),
                                 replace=False)]
        pairs = neighbour_counts(proba_cal, probe, params.radius).mean() * proba.shape[0]
        if pairs > MAX_NEIGHBOUR_PAIRS:
            grid = max(AUTO_GRID_PER_RADIUS * params.radius, 1e-6)
    centres = np.unique(proba if grid is None else np.round(np.sqrt(proba) / grid) * grid,
                        axis=0)
    if grid is not None:
        centres = np.square(centres)
    probe = centres[rng.choice(centres.shape[0], min(ESTIMATE_CENTRES, centres.shape[0]),
                               replace=False)]
    counts = neighbour_counts(proba_cal, probe, params.radius).astype(np.float64)
    n_centres = int(centres.shape[0])
    rows_per_forest = n_features * float(np.mean(counts * np.log2(np.maximum(counts, 2.0))))
    # measured: wide files cost more than linearly in their features (85 features about
    # 5x a linear fit's forecast), hence the second term
    terms = {"fixed": 1.0, "rows": float(prediction_set.n_rows), "forests": float(n_centres),
             "forest_rows": n_centres * rows_per_forest,
             "forest_rows_features": n_centres * rows_per_forest * n_features}
    return terms, n_centres, float(counts.mean())


def start_heterogeneity(services: ServiceContext, dataset_id: str,
                        params: HeterogeneityParams) -> Job:
    """Validate the request now (unknown dataset or features fail at once), then submit the job."""
    prediction_set = services.datasets.prediction_set(dataset_id)
    task = _HeterogeneityTask.prepare(services.store, dataset_id, prediction_set, params,
                                      services.recalibrations.list(dataset_id))
    estimate = estimate_heterogeneity(services, dataset_id, params)
    return services.jobs.submit("heterogeneity", task.run,
                                params={"dataset_id": dataset_id, **asdict(params)},
                                estimate=estimate.as_dict())


@dataclass(frozen=True, eq=False)
class _HeterogeneityTask:
    store: Store
    dataset_id: str
    prediction_set: PredictionSet
    params: HeterogeneityParams
    features: ForestFeatures
    rows: RowSplit
    evaluated: NDArray[np.intp]
    calibration: NDArray[np.intp]
    key: str
    #: Summaries of the dataset's stored recalibrations (their held-out measures).
    recalibrations: list[dict[str, Any]]

    @classmethod
    def prepare(cls, store: Store, dataset_id: str, prediction_set: PredictionSet,
                params: HeterogeneityParams,
                recalibrations: list[dict[str, Any]]) -> _HeterogeneityTask:
        columns = resolve_columns(prediction_set, params.features)
        features = forest_features(prediction_set, columns)
        rows = split_rows(prediction_set, params.random_state)
        evaluated = sample_rows(rows.test, params.sample, params.random_state)
        calibration = sample_rows(rows.calibration, params.calibration_sample,
                                  params.random_state)
        key = params_key(dataset_id, "hh", {**asdict(params), "features": list(columns)})
        return cls(store, dataset_id, prediction_set, params, features, rows, evaluated,
                   calibration, key, recalibrations)

    def run(self, progress: Progress) -> dict[str, Any]:
        if self.store.has_document(self.key):
            result: dict[str, Any] = self.store.read_document(self.key)
            progress.update(0.99, "loaded the cached result")
        else:
            result = self._compute(progress)
            # the result holds every evaluated row (150,000 rows of a 300k file: a second
            # or more to store, as long again for the row column): say so as it goes
            progress.update(0.98, f"storing the result ({len(result['rows']['row']):,} rows)")
            self.store.write_document(self.key, result)
            progress.update(0.99, "saving each row's HH for the other pages")
        values = np.full(self.prediction_set.n_rows, np.nan)
        values[np.asarray(result["rows"]["row"], dtype=np.intp)] = np.asarray(
            result["rows"]["hh"], dtype=np.float64)
        save_row_column(self.store, self.dataset_id, "hh", values)
        evaluated = np.zeros(self.prediction_set.n_rows, dtype=bool)
        evaluated[self.evaluated] = True
        return {**result, "recommendation": advise(result["recommendation"],
                                                   self.recalibrations),
                **weighting(self.prediction_set, evaluated)}

    def _compute(self, progress: Progress) -> dict[str, Any]:
        progress.update(0.02, "building the 2-D map")
        columns = list(self.features.columns)
        embedding = embed(self.prediction_set.features, columns=columns, reducer="pca",
                          n_components=2, sample_size=MAP_SAMPLE_ROWS,
                          random_state=self.params.random_state)

        def report(done: int, total: int) -> None:
            # called every 0.25 s, also while a large forest grows (the status line adds
            # the job's time so far and left)
            message = (f"local forests: {done:,} of {total:,} distinct neighbourhoods"
                       if total else "finding the neighbourhoods of the test rows")
            progress.update(0.05 + 0.9 * done / max(total, 1), message)

        cal, evaluated, proba = self.calibration, self.evaluated, self.prediction_set.proba
        weights = self.prediction_set.weights
        details = hidden_heterogeneity_details(
            self.features.values[cal], self.prediction_set.y_true[cal], proba[cal],
            proba[evaluated], radius=self.params.radius, random_state=self.params.random_state,
            progress=report, grid=self.params.grid,
            sample_weight=None if weights is None else weights[cal])
        progress.update(0.97, "summarizing")
        # the evaluated rows' weights: the summaries describe the weighted population
        row_weights = None if weights is None else weights[evaluated]
        recommendation = recommend_calibration(details.values, int(self.rows.calibration.size),
                                               sample_weight=row_weights)
        map_2d = embedding.map_2d
        summary = {
            "dataset_id": self.dataset_id,
            "params": {**asdict(self.params), "features": columns},
            "scheme": self.rows.scheme,
            "n_rows": self.prediction_set.n_rows,
            "n_calibration": int(self.rows.calibration.size),
            "n_calibration_used": int(cal.size),
            "grid": details.grid,
            "n_candidates": int(self.rows.test.size),
            "n_evaluated": int(evaluated.size),
            "sampled": bool(evaluated.size < self.rows.test.size),
            "mean_hh": recommendation.mean_hh,
            "median_hh": _median(details.values, row_weights),
            "share_positive": float(np.average(details.values > 0, weights=row_weights)),
            "n_neighbourhoods": int(np.unique(details.neighbourhood).size),
            "n_forests": details.n_forests,
            "median_neighbours": float(np.median(details.n_neighbours)),
            "recommendation": recommendation,
            "rows": {
                "row": evaluated,
                "id": row_ids(self.prediction_set, evaluated),
                "hh": details.values,
                "n_neighbours": details.n_neighbours,
                "confidence": proba[evaluated].max(axis=1),
                "predicted": class_names(self.prediction_set, proba[evaluated].argmax(axis=1)),
                "label": class_names(self.prediction_set, self.prediction_set.y_true[evaluated]),
                "x": map_2d[evaluated, 0],
                "y": map_2d[evaluated, 1],
            },
            "by_confidence": confidence_bins(proba[evaluated].max(axis=1), details.values,
                                             weights=row_weights),
            "map": {"source": embedding.map_source,
                    "background": self._background(map_2d)},
            "encoded_features": list(self.features.representation.encoded_names),
            "warning": self._warning(details.n_forests),
            # the forests' encoding and the map's embedding report the same imputation and
            # one-hot encoding: say each once
            "notes": list(dict.fromkeys([*self._notes(details.grid), *self.features.notes,
                                         *embedding.notes])),
        }
        progress.update(0.975, f"preparing the {evaluated.size:,} rows for the page")
        return jsonable(summary)

    def _background(self, map_2d: NDArray[np.float64]) -> dict[str, Any]:
        unevaluated = np.ones(self.prediction_set.n_rows, dtype=bool)
        unevaluated[self.evaluated] = False  # setdiff1d sorts every row: 1 s for 327k
        others = np.flatnonzero(unevaluated)
        shown = sample_rows(others, MAX_BACKGROUND_ROWS, self.params.random_state)
        return {"x": map_2d[shown, 0], "y": map_2d[shown, 1], "n_other": int(others.size)}

    def _warning(self, n_forests: int) -> str | None:
        if n_forests:
            return None
        return (f"No neighbourhood within radius {self.params.radius:g} held two classes, so "
                "HH is 0 for every row; a larger radius gives larger neighbourhoods.")

    def _notes(self, grid: float | None) -> list[str]:
        notes = [f"Rows: {self.rows.scheme}."]
        n_calibration = self.rows.calibration.size
        if self.calibration.size < n_calibration:
            notes.append(
                f"Local forests fitted on a seeded sample of {self.calibration.size:,} of the "
                f"{n_calibration:,} calibration rows (random_state={self.params.random_state}):"
                " HH grows with the neighbourhoods, so compare values computed on the same "
                "number of calibration rows; more rows take longer (calibration_sample).")
        if grid is not None:
            why = ("every distinct neighbourhood would take many minutes (grid: null for "
                   "that)" if self.params.grid == "auto" else f"grid={grid:g} was asked for")
            notes.append(
                f"Forests shared: rows whose square-root probabilities round to the same "
                f"multiple of {grid:g} share one neighbourhood, centred on that point (at "
                f"most {grid * np.sqrt(self.prediction_set.n_classes / 8):.2g} from the row "
                f"in Hellinger distance); {why}.")
        if self.evaluated.size < self.rows.test.size:
            notes.append(f"HH evaluated on a seeded sample of {self.evaluated.size:,} of the "
                         f"{self.rows.test.size:,} test rows (random_state="
                         f"{self.params.random_state}); choose 'all' to evaluate every one.")
        else:
            notes.append(f"HH evaluated on all {self.evaluated.size:,} test rows.")
        return notes
