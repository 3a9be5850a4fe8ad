"""Recalibration methods by name: building estimators from request parameters, catalogue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from math import isfinite
from typing import Any

from app.services.encoding import METHOD_ENCODER_KIND
from app.services.jsonable import jsonable
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import REGISTRY, Recalibrator


@dataclass(frozen=True)
class MethodSpec:
    """A method to fit: registry name, keyword parameters, feature columns (None: all)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    features: list[str] | None = None


def _composed_params(params: dict[str, Any]) -> dict[str, Any]:
    """``steps`` given as names or {"method", "params"} objects -> unfitted recalibrators."""
    steps = params.get("steps")
    if steps is None:
        return params
    if not isinstance(steps, list) or not steps:
        raise CalibrationInputError('"steps" must be a non-empty list of methods, e.g. '
                                    '["temperature", "lece"].', code="invalid_parameters")
    built = []
    for step in steps:
        method, step_params = composition_step(step)
        if method in (None, "composed"):
            raise CalibrationInputError(f"invalid composition step {step!r}: give a method "
                                        "name or {\"method\": ..., \"params\": {...}}.",
                                        code="invalid_parameters")
        estimator = make_recalibrator(str(method), step_params)
        if estimator.needs_features:
            raise CalibrationInputError(f"{method} uses features and cannot be a step "
                                        "of a composition here.", code="invalid_parameters")
        built.append(estimator)
    return {**params, "steps": built}


def composition_step(step: Any) -> tuple[str | None, dict[str, Any]]:
    """A composition's step, given as a method name or ``{"method": ..., "params": {...}}``:
    its method (None when it is neither) and its parameters."""
    if isinstance(step, str):
        return step, {}
    if not isinstance(step, dict) or step.get("method") is None:
        return None, {}
    return str(step["method"]), step.get("params") or {}


_PARAM_BUILDERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "composed": _composed_params}

#: Integer parameters that size arrays, loops or thread pools -> (fewest, most) accepted
#: from users. The estimators check the rest of their ranges when fitting; an uploaded
#: model document is never fitted, so these bounds are all that stands between its
#: parameters and an allocation.
PARAM_LIMITS: dict[str, tuple[int, int]] = {
    "n_bins": (1, 1000), "n_components": (1, 200), "n_folds": (2, 100),
    "n_estimators": (1, 1000), "cross_folds": (1, 100), "max_depth": (1, 20), "n_jobs": (-1, 64),
    "random_state": (0, 2**32 - 1), "max_calibration_rows": (2, 100_000_000)}


def check_params(method: str, params: dict[str, Any]) -> None:
    """Count-like parameters within :data:`PARAM_LIMITS`, numbers finite; else a 422 error.

    ``None`` passes (the estimator decides whether it means a default).
    """
    for name, value in params.items():
        problem = None
        if name in PARAM_LIMITS and value is not None:
            low, high = PARAM_LIMITS[name]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                problem = f"must be an integer from {low} to {high:,}"
        elif isinstance(value, float) and not isfinite(value):
            problem = "must be a finite number"
        if problem:
            raise CalibrationInputError(f"{method} parameter {name} {problem}; got {value!r}.",
                                        code="invalid_parameters")


def make_recalibrator(method: str, params: dict[str, Any] | None = None) -> Recalibrator:
    """An unfitted recalibrator from its registry name and keyword parameters."""
    if method not in REGISTRY:
        raise CalibrationInputError(
            f"unknown method {method!r}; choose one of {', '.join(sorted(REGISTRY))}.",
            code="unknown_method")
    check_params(method, params or {})
    params = _PARAM_BUILDERS.get(method, dict)(dict(params or {}))
    try:
        return REGISTRY[method](**params)
    except TypeError as exc:
        valid = sorted(REGISTRY[method]().get_params())
        raise CalibrationInputError(
            f"invalid parameters for {method}: {exc}. Valid parameters: "
            f"{', '.join(valid) or 'none'}.", code="invalid_parameters") from exc


def describe_params(estimator: Recalibrator) -> dict[str, Any]:
    """Parameters as JSON, nested recalibrators as {"method", "params"}."""
    def describe(value: Any) -> Any:
        if isinstance(value, Recalibrator):
            return {"method": value.method, "params": describe_params(value)}
        if isinstance(value, list | tuple):
            return [describe(item) for item in value]
        return jsonable(value)

    return {name: describe(value) for name, value in estimator.get_params(deep=False).items()}


def method_catalogue() -> list[dict[str, Any]]:
    """Registered methods with display names, default parameters and feature use."""
    features = {"variable": "one numeric variable", "table": "feature columns (default: all)",
                "encoded": "feature columns (default: all; one-hot, imputed, standardized)"}
    return [{"method": name, "name": cls.display_name or cls.__name__,
             "needs_features": cls.needs_features,
             "features": features[METHOD_ENCODER_KIND.get(name, "encoded")]
             if cls.needs_features else None,
             "params": describe_params(cls()),
             "supports_weights": cls.supports_weights}
            for name, cls in sorted(REGISTRY.items())]
