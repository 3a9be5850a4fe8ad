"""Feature encoding and PCA as plain arrays: the serializable part of phi.

:class:`Representation` standardizes numeric columns, one-hot encodes
categorical ones, imputes missing values (numeric: the fitted median;
categorical: the most frequent fitted category) and optionally projects on
principal axes. Its fitted state is arrays and strings only, so
:meth:`Representation.to_dict` is plain JSON that reads back exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_positive_int, describe_rows, first_rows
from calibcore.exceptions import CalibrationInputError

FeatureTable: TypeAlias = pd.DataFrame
RepresentationReducer = Literal["none", "pca", "columns"]
REPRESENTATION_REDUCERS: tuple[RepresentationReducer, ...] = ("none", "pca", "columns")
#: A categorical column with more distinct values than this is refused (one-hot would explode).
MAX_CATEGORIES = 100
_FORMAT = "calibdash-representation"


def as_table(features: FeatureTable | ArrayLike) -> FeatureTable:
    """A DataFrame view of ``features`` (arrays get columns ``x0, x1, ...``)."""
    if isinstance(features, pd.DataFrame):
        table = features
    else:
        array = np.asarray(features)
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2:
            raise CalibrationInputError(
                f"features must be a table or a 2-D array; got shape {array.shape}."
            )
        table = pd.DataFrame(array, columns=[f"x{j}" for j in range(array.shape[1])])
    if table.shape[0] == 0 or table.shape[1] == 0:
        raise CalibrationInputError(
            f"features are empty ({table.shape[0]} rows, {table.shape[1]} columns)."
        )
    return table


def principal_axes(
    matrix: NDArray[np.float64], n_components: int, *, drop_degenerate: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and the first ``n_components`` principal axes (rows) of ``matrix``.

    Each axis is signed so that its largest-magnitude entry is positive, which
    makes the result deterministic. With ``drop_degenerate``, axes along which
    the rows do not vary (singular value below 1e-9 of the largest) are left
    out: they would add a dimension, and so widen the kernel's ``d * gamma``,
    without adding any distance.
    """
    mean = matrix.mean(axis=0)
    _, singular, vt = np.linalg.svd(matrix - mean, full_matrices=False)
    keep = n_components
    if drop_degenerate and singular.size:
        keep = min(keep, max(1, int(np.sum(singular > 1e-9 * singular[0]))))
    axes = vt[:keep]
    signs = np.sign(axes[np.arange(axes.shape[0]), np.abs(axes).argmax(axis=1)])
    return mean, axes * np.where(signs == 0, 1.0, signs)[:, None]


@dataclass(frozen=True, eq=False)
class Representation:
    """A fitted encoding (and optional PCA) of feature columns.

    Attributes
    ----------
    reducer : {"none", "pca", "columns"}
        ``"columns"``: numeric columns used as given (no standardization).
    numeric_columns, categorical_columns : tuple of str
    centers, scales, fill_values : ndarray of shape (n_numeric,)
        Standardization ``(x - center) / scale`` and the value imputed for missing x.
    categories : tuple of tuple of str
        One-hot levels of each categorical column (unseen levels encode as all zeros).
    fill_categories : tuple of str
        Level imputed for a missing categorical value.
    pca_mean : ndarray of shape (p,) or None
    pca_axes : ndarray of shape (k, p) or None
    imputed : tuple of (str, int)
        Missing values imputed per column when fitting (report only).
    notes : tuple of str
        What was done, in words (report only).
    """

    reducer: RepresentationReducer
    numeric_columns: tuple[str, ...]
    centers: NDArray[np.float64]
    scales: NDArray[np.float64]
    fill_values: NDArray[np.float64]
    categorical_columns: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    fill_categories: tuple[str, ...]
    pca_mean: NDArray[np.float64] | None = None
    pca_axes: NDArray[np.float64] | None = None
    imputed: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """Input columns, numeric first."""
        return self.numeric_columns + self.categorical_columns

    @property
    def encoded_names(self) -> tuple[str, ...]:
        """Names of the encoded columns (before PCA)."""
        one_hot = tuple(
            f"{column}={level}"
            for column, levels in zip(self.categorical_columns, self.categories, strict=True)
            for level in levels
        )
        return self.numeric_columns + one_hot

    @property
    def dimension(self) -> int:
        """Dimension of the output."""
        if self.pca_axes is not None:
            return int(self.pca_axes.shape[0])
        return len(self.encoded_names)

    def encode(self, features: FeatureTable | ArrayLike) -> NDArray[np.float64]:
        """Encoded features, shape (n, p), before any PCA."""
        table = as_table(features)
        absent = [c for c in self.columns if c not in table.columns]
        if absent:
            raise CalibrationInputError(
                f"features lack the column(s) {', '.join(map(repr, absent))} "
                "that the representation was fitted on.",
                code="missing_column", column=str(absent[0]),
            )
        blocks = [np.empty((table.shape[0], 0))]
        if self.numeric_columns:
            values, missing = _numeric_block(table, self.numeric_columns)
            values = np.where(missing, self.fill_values, values)
            blocks.append((values - self.centers) / self.scales)
        for column, levels, fill in zip(
            self.categorical_columns, self.categories, self.fill_categories, strict=True
        ):
            text, missing = _category_strings(table[column])
            text = np.where(missing, fill, text)
            blocks.append((text[:, None] == np.array(levels, dtype=object)[None, :]).astype(float))
        return np.hstack(blocks)

    def project(self, encoded: NDArray[np.float64]) -> NDArray[np.float64]:
        """Apply the PCA (if any) to encoded features."""
        if self.pca_axes is None or self.pca_mean is None:
            return encoded
        return (encoded - self.pca_mean) @ self.pca_axes.T

    def transform(self, features: FeatureTable | ArrayLike) -> NDArray[np.float64]:
        """phi(x): encoded and projected features, shape (n, d)."""
        return self.project(self.encode(features))

    def with_pca(self, encoded_rows: NDArray[np.float64], n_components: int) -> Representation:
        """This encoding followed by PCA fitted on ``encoded_rows`` (clipped to their rank)."""
        mean, axes = principal_axes(encoded_rows, n_components, drop_degenerate=True)
        keep = axes.shape[0]
        centered = encoded_rows - mean
        total = float(np.square(centered).sum())
        kept = float(np.square(centered @ axes.T).sum())
        share = f"{100.0 * kept / total:.1f}%" if total > 0 else "all"
        note = (f"PCA({keep}) fitted on {encoded_rows.shape[0]:,} rows keeps {share} "
                "of the variance.")
        return replace(self, reducer="pca", pca_mean=mean, pca_axes=axes,
                       notes=(*self.notes, note))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (floats as Python floats, which round-trip exactly)."""
        return {
            "format": _FORMAT,
            "reducer": self.reducer,
            "numeric_columns": list(self.numeric_columns),
            "centers": self.centers.tolist(),
            "scales": self.scales.tolist(),
            "fill_values": self.fill_values.tolist(),
            "categorical_columns": list(self.categorical_columns),
            "categories": [list(levels) for levels in self.categories],
            "fill_categories": list(self.fill_categories),
            "pca_mean": None if self.pca_mean is None else self.pca_mean.tolist(),
            "pca_axes": None if self.pca_axes is None else self.pca_axes.tolist(),
        }

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Representation:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(document, dict) or document.get("format") != _FORMAT:
            raise CalibrationInputError(
                f"not a representation document: expected a JSON object with "
                f'"format": "{_FORMAT}".'
            )
        try:
            def floats(name: str) -> NDArray[np.float64]:
                return np.asarray(document[name], dtype=np.float64)

            n_axes = len(document["pca_axes"] or [])
            return cls(
                reducer=document["reducer"],
                numeric_columns=tuple(map(str, document["numeric_columns"])),
                centers=floats("centers"),
                scales=floats("scales"),
                fill_values=floats("fill_values"),
                categorical_columns=tuple(map(str, document["categorical_columns"])),
                categories=tuple(tuple(map(str, levels)) for levels in document["categories"]),
                fill_categories=tuple(map(str, document["fill_categories"])),
                pca_mean=None if document["pca_mean"] is None else floats("pca_mean"),
                pca_axes=None if document["pca_axes"] is None
                else floats("pca_axes").reshape(n_axes, -1),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationInputError(f"malformed representation document: {exc}") from exc


def fit_representation(
    features: FeatureTable | ArrayLike,
    *,
    columns: list[str] | None = None,
    categorical: list[str] | None = None,
    reducer: RepresentationReducer = "none",
    n_components: int = 2,
) -> Representation:
    """Fit the serializable representation on the rows of ``features``.

    Parameters
    ----------
    features : DataFrame or array-like of shape (n, p)
    columns : list of str, optional
        Columns to use (default: all).
    categorical : list of str, optional
        Numeric columns to one-hot nevertheless (e.g. integer codes).
    reducer : {"none", "pca", "columns"}, default="none"
        ``"columns"`` uses numeric columns as given (an embedding supplied by the user).
    n_components : int, default=2
        PCA components (clipped to the rank of the encoded rows).

    Returns
    -------
    Representation
    """
    if reducer not in REPRESENTATION_REDUCERS:
        raise CalibrationInputError(
            f"reducer must be one of {', '.join(REPRESENTATION_REDUCERS)} for a serializable "
            f"representation (t-SNE and UMAP cannot be saved); got {reducer!r}."
        )
    table = as_table(features)
    chosen = _chosen_columns(table, columns)
    forced = set(categorical or ())
    unknown = forced - set(chosen)
    if unknown:
        raise CalibrationInputError(
            f"categorical names column(s) not among the chosen ones: {sorted(unknown)}."
        )
    numeric = tuple(c for c in chosen if c not in forced and _is_numeric(table[c]))
    categorical_columns = tuple(c for c in chosen if c not in numeric)
    if reducer == "columns" and categorical_columns:
        raise CalibrationInputError(
            "embedding columns must be numeric; these are not: "
            f"{', '.join(map(repr, categorical_columns))}.",
            code="non_numeric_embedding", column=categorical_columns[0],
        )
    imputed: list[tuple[str, int]] = []
    centers, scales, fills = _fit_numeric(table, numeric, standardize=reducer != "columns",
                                          imputed=imputed)
    levels, fill_levels = _fit_categories(table, categorical_columns, imputed)
    notes = [f"{count:,} missing values in {column!r} were imputed." for column, count in imputed]
    if categorical_columns:
        notes.append(f"one-hot encoded: {', '.join(categorical_columns)}.")
    representation = Representation(
        reducer="columns" if reducer == "columns" else "none",
        numeric_columns=numeric, centers=centers, scales=scales, fill_values=fills,
        categorical_columns=categorical_columns, categories=levels,
        fill_categories=fill_levels, imputed=tuple(imputed), notes=tuple(notes),
    )
    if reducer == "pca":
        n_components = check_positive_int(n_components, "n_components")
        return representation.with_pca(representation.encode(table), n_components)
    return representation


def _chosen_columns(table: FeatureTable, columns: list[str] | None) -> tuple[str, ...]:
    if columns is None:
        return tuple(str(c) for c in table.columns)
    if len(columns) == 0:
        raise CalibrationInputError("choose at least one feature column.")
    absent = [c for c in columns if c not in table.columns]
    if absent:
        raise CalibrationInputError(
            f"no feature column named {', '.join(map(repr, absent))}; "
            f"the table has {', '.join(map(repr, map(str, table.columns)))}.",
            code="missing_column", column=str(absent[0]),
        )
    return tuple(dict.fromkeys(str(c) for c in columns))


def _is_numeric(series: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def _numeric_block(
    table: FeatureTable, columns: tuple[str, ...]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Numeric values (n, p) and where they are missing; infinities are refused."""
    blocks = []
    for column in columns:
        try:
            values = pd.to_numeric(table[column], errors="raise").to_numpy(
                dtype=np.float64, na_value=np.nan
            )
        except (TypeError, ValueError) as exc:
            raise CalibrationInputError(
                f"feature column {column!r} was numeric when fitted but is not now: {exc}",
                code="non_numeric_feature", column=column,
            ) from exc
        infinite = np.isinf(values)
        if infinite.any():
            raise CalibrationInputError(
                f"feature column {column!r} has infinite values in {describe_rows(infinite)}.",
                code="non_finite_feature", column=column, rows=first_rows(infinite),
                count=int(infinite.sum()),
            )
        blocks.append(values)
    values = np.column_stack(blocks)
    return values, np.isnan(values)


def _fit_numeric(
    table: FeatureTable, columns: tuple[str, ...], *, standardize: bool,
    imputed: list[tuple[str, int]],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    if not columns:
        empty = np.empty(0)
        return empty, empty.copy(), empty.copy()
    values, missing = _numeric_block(table, columns)
    empty_columns = [c for j, c in enumerate(columns) if missing[:, j].all()]
    if empty_columns:
        raise CalibrationInputError(
            f"feature column {empty_columns[0]!r} has no values; leave it out.",
            code="empty_feature", column=empty_columns[0],
        )
    imputed.extend((c, int(k)) for c, k in zip(columns, missing.sum(axis=0), strict=True) if k)
    fills = np.nanmedian(values, axis=0)
    filled = np.where(missing, fills, values)
    if not standardize:
        return np.zeros(len(columns)), np.ones(len(columns)), fills
    scales = filled.std(axis=0)
    return filled.mean(axis=0), np.where(scales > 0, scales, 1.0), fills


def _category_strings(series: pd.Series) -> tuple[NDArray[np.object_], NDArray[np.bool_]]:
    missing = series.isna().to_numpy()
    text = np.array([str(v) for v in series.to_numpy(dtype=object)], dtype=object)
    return text, missing


def _fit_categories(
    table: FeatureTable, columns: tuple[str, ...], imputed: list[tuple[str, int]]
) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    levels, fills = [], []
    for column in columns:
        text, missing = _category_strings(table[column])
        present = text[~missing]
        if present.size == 0:
            raise CalibrationInputError(
                f"feature column {column!r} has no values; leave it out.",
                code="empty_feature", column=column,
            )
        values, counts = np.unique(present.astype(str), return_counts=True)
        if values.size > MAX_CATEGORIES:
            raise CalibrationInputError(
                f"categorical column {column!r} has {values.size:,} distinct values, too many "
                f"to one-hot (at most {MAX_CATEGORIES}); leave it out or bin it.",
                code="too_many_categories", column=column,
            )
        if missing.any():
            imputed.append((column, int(missing.sum())))
        levels.append(tuple(str(v) for v in values))
        fills.append(str(values[counts.argmax()]))
    return tuple(levels), tuple(fills)
