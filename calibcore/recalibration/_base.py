"""The recalibrator contract shared by every family.

A recalibrator maps class probabilities (and, for local methods, features) to
corrected class probabilities. It is a scikit-learn estimator:

* ``__init__`` only stores keyword arguments (so ``get_params``/``clone`` work);
* ``fit(y_prob, y_true, features=None)`` validates, sets ``trailing_underscore_``
  attributes and returns ``self``;
* ``predict_proba(y_prob, features=None)`` starts with ``check_is_fitted`` and
  returns rows on the probability simplex, shape (n, K) (binary input of shape
  (n,) gives (n, 2));
* both take ``progress=``, a callback ``progress(fraction, message)`` that the
  long loops call every 0.25 s or so; raising from it stops the work.

Fitted recalibrators serialize to plain JSON (``to_json``/``from_json``),
never pickle. Floats survive the round trip exactly because Python writes the
shortest repr that reads back to the same double.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from calibcore._progress import Heartbeat
from calibcore._validation import check_predictions, check_probabilities
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError

JSON_FORMAT_VERSION = 1
_ARRAY_TAG = "__ndarray__"
_ESTIMATOR_TAG = "__recalibrator__"
#: An unfitted recalibrator (e.g. a step of a composition given as a parameter).
_UNFITTED_TAG = "__unfitted_recalibrator__"

#: ``progress(fraction, message)`` of a fit or a prediction.
ProgressCallback = Callable[[float, str], None]

#: method name -> class; filled by ``register``.
REGISTRY: dict[str, type[Recalibrator]] = {}


def weighted_methods() -> list[str]:
    """The registered methods whose ``fit`` takes ``sample_weight``."""
    return sorted(name for name, cls in REGISTRY.items() if cls.supports_weights)


def register(cls: type[Recalibrator]) -> type[Recalibrator]:
    """Class decorator adding a recalibrator to :data:`REGISTRY` under ``cls.method``."""
    if cls.method in REGISTRY and REGISTRY[cls.method] is not cls:
        raise RuntimeError(f"two recalibrators claim the method name {cls.method!r}")
    REGISTRY[cls.method] = cls
    return cls


def encode_json(value: Any) -> Any:
    """Turn arrays, numpy scalars and nested recalibrators into JSON-able values."""
    if isinstance(value, Recalibrator):
        if not hasattr(value, "n_classes_"):
            params = encode_json(value.get_params(deep=False))
            return {_UNFITTED_TAG: {"method": value.method, "params": params}}
        return {_ESTIMATOR_TAG: value.to_json()}
    if isinstance(value, np.ndarray):
        data = value.tolist()
        plain = value.dtype.kind in "biu" or (value.dtype.kind == "f" and bool(
            np.isfinite(value).all()))
        return {
            # Plain numbers need no element-by-element pass (SWC's leaves: 15M of them).
            _ARRAY_TAG: data if plain else encode_json(data),
            "dtype": value.dtype.str,
            "shape": list(value.shape),
        }
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): encode_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode_json(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return {"__float__": repr(value)}
    return value


def decode_json(value: Any) -> Any:
    """Inverse of :func:`encode_json`."""
    if isinstance(value, dict):
        if _ARRAY_TAG in value:
            data = decode_json(value[_ARRAY_TAG])
            array = np.array(data, dtype=np.dtype(value["dtype"]))
            return array.reshape(value["shape"])
        if _ESTIMATOR_TAG in value:
            return Recalibrator.from_json(value[_ESTIMATOR_TAG])
        if _UNFITTED_TAG in value:
            spec = value[_UNFITTED_TAG]
            target = REGISTRY.get(str(spec.get("method"))) if isinstance(spec, dict) else None
            if target is None:
                raise CalibrationInputError(f"unknown or malformed nested recalibrator {spec!r}.")
            return target(**decode_json(spec.get("params", {})))
        if "__float__" in value:
            return float(value["__float__"])
        return {k: decode_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_json(v) for v in value]
    return value


class Recalibrator(BaseEstimator):
    """Base class of every recalibrator; see the module docstring for the contract.

    Subclasses set ``method`` (the registry name), ``needs_features``,
    ``fitted_attributes`` (the ``trailing_underscore_`` attributes that make up the
    fitted state), and implement ``_fit`` and ``_predict`` on validated arrays.
    """

    method: ClassVar[str] = ""
    display_name: ClassVar[str] = ""
    needs_features: ClassVar[bool] = False
    fitted_attributes: ClassVar[tuple[str, ...]] = ()
    #: Values of parameters added after documents were written without them, so an older
    #: document keeps predicting as it did (its new parameters' defaults may differ).
    legacy_params: ClassVar[dict[str, Any]] = {}
    #: Whether ``fit`` takes ``sample_weight`` (row weights); the others refuse them.
    supports_weights: ClassVar[bool] = False

    def fit(self, y_prob: ArrayLike, y_true: ArrayLike, features: ArrayLike | None = None, *,
            progress: ProgressCallback | None = None,
            sample_weight: ArrayLike | None = None) -> Self:
        """Fit on calibration rows.

        Parameters
        ----------
        y_prob : array-like of shape (n,) or (n, K)
            Uncalibrated probabilities (P(class 1) when 1-D).
        y_true : array-like of shape (n,)
            Class indices 0..K-1.
        features : array-like of shape (n, d), optional
            Required by recalibrators with ``needs_features``.
        progress : callable, optional
            ``progress(fraction, message)``, called from the long loops of methods that
            have them (forests, neighbour searches, cross-validation) at most every
            0.25 s; an exception raised by it stops the fit and propagates.
        sample_weight : array-like of shape (n,), optional
            Row weights, as scikit-learn estimators take them: the fit is that of the
            weighted rows (for integer weights, of the rows repeated by their weights).
            Weights all 1 are treated as no weights, so they fit bit for bit the same.
            Methods without ``supports_weights`` refuse them with a
            :class:`~calibcore.CalibrationInputError` naming the method.

        Returns
        -------
        self
        """
        labels, proba = check_predictions(y_true, y_prob)
        weights = check_sample_weight(sample_weight, labels.size)
        if weights is not None and not self.supports_weights:
            raise CalibrationInputError(
                f"{self._weights_refusal()}; fit it without them, or choose a method that "
                f"does: {', '.join(weighted_methods())}.", code="weights_not_supported")
        if weights is not None and bool(np.all(weights == 1.0)):
            weights = None  # weights all 1 are no weights: the same fit, bit for bit
        _check_two_classes(labels if weights is None else labels[weights > 0], proba.shape[1])
        checked = self._check_features(features, proba.shape[0])
        self.n_classes_ = proba.shape[1]
        try:
            if weights is None:
                self._fit(proba, labels, checked, _heartbeat(progress))
            else:
                # the methods with supports_weights take weights= in their _fit
                weighted_fit: Any = self._fit
                weighted_fit(proba, labels, checked, _heartbeat(progress), weights=weights)
        except BaseException:
            del self.n_classes_  # a failed fit must not look fitted
            raise
        return self

    def predict_proba(
        self, y_prob: ArrayLike, features: ArrayLike | None = None, *,
        progress: ProgressCallback | None = None,
    ) -> NDArray[np.float64]:
        """Corrected probabilities, shape (n, K), each row on the simplex.

        ``progress`` is as in :meth:`fit` (only the slow methods call it: SWC-HH's
        hidden heterogeneity, neighbour searches).
        """
        check_is_fitted(self, "n_classes_")
        proba = self._checked_proba(y_prob)
        checked = self._check_features(features, proba.shape[0])
        return _to_simplex(self._predict(proba, checked, _heartbeat(progress)))

    def _weights_refusal(self) -> str:
        """Why this recalibrator refuses ``sample_weight`` (the start of the message)."""
        return f"{self.display_name or type(self).__name__} does not take sample weights"

    def _checked_proba(self, y_prob: ArrayLike) -> NDArray[np.float64]:
        """``y_prob`` validated, with as many classes as the fit saw."""
        proba = check_probabilities(y_prob)
        if proba.shape[1] != self.n_classes_:
            raise CalibrationInputError(
                f"this recalibrator was fitted on {self.n_classes_} classes; "
                f"y_prob has {proba.shape[1]}."
            )
        return proba

    def _check_features(
        self, features: ArrayLike | None, n_rows: int
    ) -> NDArray[np.float64] | None:
        if not self.needs_features:
            return None
        if features is None:
            raise CalibrationInputError(
                f"{type(self).__name__} needs features: pass features= (n, d) numeric array."
            )
        try:
            array = np.asarray(features, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise CalibrationInputError(
                f"features must be numeric (one-hot encode categories first): {exc}"
            ) from exc
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2 or array.shape[0] != n_rows:
            raise CalibrationInputError(
                f"features must have shape ({n_rows}, d); got {array.shape}."
            )
        return array

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> None:
        raise NotImplementedError

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict with the method, its parameters and the fitted state."""
        check_is_fitted(self, "n_classes_")
        state = {name: getattr(self, name) for name in ("n_classes_", *self.fitted_attributes)}
        return {
            "format": "calibdash-recalibrator",
            "version": JSON_FORMAT_VERSION,
            "method": self.method,
            "params": encode_json(self.get_params(deep=False)),
            "state": encode_json(state),
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Recalibrator:
        """Rebuild a fitted recalibrator from :meth:`to_json` output.

        Called on the base class it dispatches on ``document["method"]``.
        """
        if not isinstance(document, dict) or document.get("format") != "calibdash-recalibrator":
            raise CalibrationInputError(
                "not a calibdash recalibrator document: expected a JSON object with "
                '"format": "calibdash-recalibrator".'
            )
        if document.get("version") != JSON_FORMAT_VERSION:
            raise CalibrationInputError(
                f"unsupported recalibrator document version {document.get('version')!r}; "
                f"this calibdash reads version {JSON_FORMAT_VERSION}."
            )
        method = document.get("method")
        target = REGISTRY.get(str(method)) if cls is Recalibrator else cls
        if target is None or target.method != method:
            raise CalibrationInputError(
                f"unknown recalibration method {method!r}; known: {', '.join(sorted(REGISTRY))}."
            )
        try:
            estimator = target(**{**target.legacy_params,
                                  **decode_json(document.get("params", {}))})
            for name, value in decode_json(document["state"]).items():
                if name != "n_classes_" and name not in target.fitted_attributes:
                    raise CalibrationInputError(
                        f"unexpected fitted attribute {name!r} for {method}."
                    )
                setattr(estimator, name, value)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CalibrationInputError):
                raise
            raise CalibrationInputError(f"malformed recalibrator document: {exc}") from exc
        return estimator


@runtime_checkable
class IntervalRecalibrator(Protocol):
    """A recalibrator that also bounds each corrected probability (Venn-Abers)."""

    def predict_interval(
        self, y_prob: ArrayLike, features: ArrayLike | None = None, *,
        progress: ProgressCallback | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Lower and upper ends of each class's probability, two arrays of shape (n, K)."""
        ...


def _heartbeat(progress: ProgressCallback | Heartbeat | None) -> Heartbeat:
    """The callback as a throttled heartbeat (a step of a composition passes its own on);
    until a method reports a fraction and a message, it is called with (0.0, "")."""
    if isinstance(progress, Heartbeat):
        return progress
    return Heartbeat(progress, 0.0, "")


def _check_two_classes(labels: NDArray[np.intp], n_classes: int) -> None:
    """Refuse calibration rows that hold one class: every map fitted on them is degenerate."""
    counts = np.bincount(labels, minlength=n_classes)
    present = np.flatnonzero(counts)
    if present.size < 2:
        held = ", ".join(f"class {k}: {counts[k]:,} rows" for k in present)
        raise CalibrationInputError(
            f"the calibration rows hold a single class ({held}; every other class 0 rows); "
            "a recalibrator needs rows of at least two classes to learn anything. Use more "
            "calibration rows or another split.", code="single_class")


def _to_simplex(proba: NDArray[np.float64]) -> NDArray[np.float64]:
    """Clip tiny negatives from round-off and renormalize rows to sum to one."""
    clipped = np.clip(proba, 0.0, None)
    totals = clipped.sum(axis=1, keepdims=True)
    uniform = np.full_like(clipped, 1.0 / clipped.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, clipped / totals, uniform)


def log_probabilities(proba: NDArray[np.float64], floor: float = 1e-12) -> NDArray[np.float64]:
    """log p with probabilities clipped at ``floor`` (used as logits by scaling methods)."""
    return np.log(np.clip(proba, floor, 1.0))


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax, stable for large logits."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def one_vs_rest_columns(n_classes: int) -> list[int]:
    """Columns that get a map of their own: P(class 1) when binary, every class otherwise."""
    return [1] if n_classes == 2 else list(range(n_classes))


def combine_one_vs_rest(
    proba: NDArray[np.float64], mapped: list[NDArray[np.float64]]
) -> NDArray[np.float64]:
    """Class probabilities from per-class maps (rows are renormalized by ``predict_proba``).

    Binary: ``[1 - m, m]`` from the one map of P(class 1). Multiclass: the maps side by
    side; a row that every map sends to zero keeps its original probabilities.
    """
    if proba.shape[1] == 2:
        return np.column_stack([1.0 - mapped[0], mapped[0]])
    stacked = np.column_stack(mapped)
    empty = stacked.sum(axis=1) <= 0.0
    stacked[empty] = proba[empty]
    return stacked
