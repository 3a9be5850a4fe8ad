"""The schema of an uploaded recalibrator document, checked before anything is built.

A model document (:mod:`app.services.saved_models`) is plain JSON whose arrays are the
tagged objects :func:`calibcore.recalibration._base.encode_json` writes::

    {"__ndarray__": [[0.1, 0.9], [0.4, 0.6]], "dtype": "<f8", "shape": [2, 2]}

``decode_json`` hands ``dtype`` and ``shape`` to numpy as they are, so a 342-byte
document naming the dtype ``"S200000000"`` allocated 950 MiB and a class count of
5e9 asked for 37 GiB. :func:`validate_document` checks the whole document first,
allocating nothing beyond the parsed JSON:

* ``format``, ``version`` and ``method`` (a registered name), for nested
  recalibrators too; only the parameter and state names the method has;
  count-like parameters within :data:`app.services.methods.PARAM_LIMITS`, floats
  finite; ``n_classes_`` an integer from 2 to :data:`MAX_CLASSES`;
* arrays: a dtype the exporter writes (float64, float32, int64, int32, bool), at
  most two dimensions, each >= 0; nested lists exactly as long as the shape says
  *before* numpy sees them; elements numbers of the dtype (integers within its
  range, ``{"__float__": "nan" | "inf" | "-inf"}`` in float arrays);
* at most ``max_values`` numbers in all (arrays and plain lists), nesting at most
  :data:`MAX_DEPTH` deep (exported documents reach 9), integers within 64 bits.

The schema is a gate: the document that passes is decoded by calibcore as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain
from math import prod
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from app.services.methods import check_params
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import JSON_FORMAT_VERSION, REGISTRY

#: Deepest nesting of objects and lists accepted (exported documents reach 9).
MAX_DEPTH = 32
#: Most classes a recalibrator may predict (ImageNet-1k fits ten times over).
MAX_CLASSES = 10_000
#: ``ndarray.dtype.str`` of the arrays the exporter writes (little-endian machines).
ArrayDtype = Literal["<f8", "<f4", "<i8", "<i4", "|b1"]

_INT64 = (-(2**63), 2**63 - 1)
#: Integers a float or int array may hold (bool arrays hold only JSON booleans).
_INT_RANGES: dict[str, tuple[int, int]] = {
    "<f8": _INT64, "<f4": _INT64, "<i8": _INT64, "<i4": (-(2**31), 2**31 - 1)}
_ELEMENT_TYPES: dict[str, frozenset[type]] = {
    "<f8": frozenset({float, int, dict}), "<f4": frozenset({float, int, dict}),
    "<i8": frozenset({int}), "<i4": frozenset({int}), "|b1": frozenset({bool})}
_SCALAR_TYPES = frozenset({type(None), bool, int, float, str})
_NON_FINITE = frozenset({"nan", "inf", "-inf"})
_TAGS = ("__ndarray__", "__recalibrator__", "__unfitted_recalibrator__", "__float__")


class InvalidModelDocument(CalibrationInputError):
    """A model document that does not match the schema; ``field`` is where."""

    def __init__(self, message: str, *, field: str, problems: list[str]) -> None:
        super().__init__(message, code="invalid_model")
        self.field = field
        self.problems = problems

    def details(self) -> dict[str, object]:
        return {**super().details(), "field": self.field, "problems": self.problems}


class _ValueBudget:
    """Numbers still allowed in the document (None: no cap, for documents we wrote)."""

    def __init__(self, max_values: int | None) -> None:
        self.max_values = max_values
        self.used = 0

    def take(self, count: int, what: str) -> None:
        self.used += count
        if self.max_values is not None and self.used > self.max_values:
            raise PydanticCustomError(
                "too_many_values", "{what} brings the document to {used} values, more than "
                "the limit of {limit} (CALIBDASH_MAX_MODEL_VALUES)",
                {"what": what, "used": f"{self.used:,}", "limit": f"{self.max_values:,}"})


def _budget(info: ValidationInfo) -> _ValueBudget:
    context = info.context or {}
    budget = context.get("budget")
    return budget if isinstance(budget, _ValueBudget) else _ValueBudget(None)


# -- scalars and plain lists --------------------------------------------------------
Elements = Callable[[], Iterator[Any]]


def _check_ints(elements: Elements, kinds: set[type], low: int, high: int, what: str) -> None:
    """Every int among ``elements()`` within [low, high]; one error for all of them."""
    def ints() -> Iterator[Any]:
        return elements() if kinds == {int} else (v for v in elements() if type(v) is int)

    if min(ints(), default=low) < low or max(ints(), default=high) > high:
        raise PydanticCustomError("integer_out_of_range",
                                  "{what} hold integers outside [{low}, {high}]",
                                  {"what": what, "low": low, "high": high})


def _check_scalar(value: Any) -> Any:
    if type(value) not in _SCALAR_TYPES:
        raise PydanticCustomError("not_a_scalar", "expected a number, string, boolean or null")
    if type(value) is int:
        _check_ints(lambda: iter((value,)), {int}, *_INT64, "values")
    return value


def _check_numbers(values: list[Any], info: ValidationInfo) -> list[Any]:
    """A list of scalars, checked in one pass (no per-element validation)."""
    _budget(info).take(len(values), f"a list of {len(values):,} values")
    kinds = set(map(type, values))
    if not kinds <= _SCALAR_TYPES:
        raise PydanticCustomError("not_a_scalar", "list elements must be numbers, strings, "
                                  "booleans or null")
    if int in kinds:
        _check_ints(lambda: iter(values), kinds, *_INT64, "list elements")
    return values


def _count_list(values: list[Any], info: ValidationInfo) -> list[Any]:
    _budget(info).take(len(values), f"a list of {len(values):,} values")
    return values


# -- arrays ---------------------------------------------------------------------------
class EncodedFloat(BaseModel):
    """A non-finite float, ``{"__float__": "nan"}`` (JSON has no NaN or infinity)."""

    model_config = ConfigDict(extra="forbid")

    value: Literal["nan", "inf", "-inf"] = Field(alias="__float__")


class EncodedArray(BaseModel):
    """An ndarray as nested lists with its dtype and shape."""

    model_config = ConfigDict(extra="forbid")

    values: Any = Field(alias="__ndarray__")
    dtype: ArrayDtype
    shape: list[Annotated[StrictInt, Field(ge=0)]] = Field(max_length=2)

    @model_validator(mode="after")
    def _values_match_shape(self, info: ValidationInfo) -> EncodedArray:
        n_values = prod(self.shape)
        _budget(info).take(n_values, f"an array of shape {tuple(self.shape)}")
        elements = _elements(self.values, self.shape)
        allowed = _ELEMENT_TYPES[self.dtype]
        kinds = set(map(type, elements()))
        if not kinds <= allowed:
            found = ", ".join(sorted(k.__name__ for k in kinds - allowed))
            raise PydanticCustomError("array_element_type", "{dtype} array holds {found} values",
                                      {"dtype": self.dtype, "found": found})
        if dict in kinds and not all(
                v.keys() == {"__float__"} and v["__float__"] in _NON_FINITE
                for v in elements() if type(v) is dict):
            raise PydanticCustomError("array_element_type", 'the only objects a float array '
                                      'may hold are {"__float__": "nan" | "inf" | "-inf"}')
        if int in kinds:
            _check_ints(elements, kinds, *_INT_RANGES[self.dtype], f"{self.dtype} values")
        return self


def _elements(values: Any, shape: list[int]) -> Elements:
    """A function iterating over the elements, once the nesting matches ``shape``."""
    def mismatch(detail: str) -> PydanticCustomError:
        return PydanticCustomError("shape_mismatch", "values do not match shape {shape}: "
                                   "{detail}", {"shape": shape, "detail": detail})

    if not shape:
        if isinstance(values, list | dict) and not (
                isinstance(values, dict) and "__float__" in values):
            raise mismatch("a 0-d array holds one number")
        return lambda: iter((values,))
    if type(values) is not list or len(values) != shape[0]:
        length = len(values) if type(values) is list else type(values).__name__
        raise mismatch(f"{shape[0]} rows expected, got {length}")
    if len(shape) == 1:
        return lambda: iter(values)
    width = shape[1]
    if not all(type(row) is list and len(row) == width for row in values):
        raise mismatch(f"every row must be a list of {width} values")
    return lambda: chain.from_iterable(values)


# -- the recursive value tree ---------------------------------------------------------
def _kind(value: Any) -> str:
    """The tag of a JSON value: tagged objects by their key, lists of scalars apart."""
    if isinstance(value, dict):
        return next((f"<{tag}>" for tag in _TAGS if tag in value), "<object>")
    if isinstance(value, list):
        return "<numbers>" if all(type(v) in _SCALAR_TYPES for v in value) else "<list>"
    return "<scalar>"


if TYPE_CHECKING:  # mypy cannot follow the recursive alias; pydantic needs it
    Encoded = Any
else:
    Encoded = TypeAliasType("Encoded", Annotated[
        Annotated[EncodedArray, Tag("<__ndarray__>")]
        | Annotated["NestedRecalibrator", Tag("<__recalibrator__>")]
        | Annotated["UnfittedRecalibrator", Tag("<__unfitted_recalibrator__>")]
        | Annotated[EncodedFloat, Tag("<__float__>")]
        | Annotated[dict[str, "Encoded"], Tag("<object>")]
        | Annotated[list[Any], BeforeValidator(_check_numbers), Tag("<numbers>")]
        | Annotated[list["Encoded"], BeforeValidator(_count_list), Tag("<list>")]
        | Annotated[Any, BeforeValidator(_check_scalar), Tag("<scalar>")],
        Discriminator(_kind)])


def _known_method(method: Any) -> Any:
    # a method that is not a string is StrictStr's to refuse (a dict is not hashable)
    if isinstance(method, str) and method not in REGISTRY:
        raise PydanticCustomError("unknown_method", "unknown recalibration method '{method}'; "
                                  "known: {known}",
                                  {"method": method, "known": ", ".join(sorted(REGISTRY))})
    return method


MethodName = Annotated[StrictStr, BeforeValidator(_known_method)]


def _checked_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Only ``method``'s parameter names; counts within limits, floats finite."""
    unknown = sorted(set(params) - set(REGISTRY[method]._get_param_names()))
    if unknown:
        raise PydanticCustomError("unknown_parameter", "{method} has no parameter {names}",
                                  {"method": method, "names": ", ".join(unknown)})
    plain = {name: float(value.value) if isinstance(value, EncodedFloat) else value
             for name, value in params.items()}
    try:
        check_params(method, plain)
    except CalibrationInputError as exc:
        raise PydanticCustomError("invalid_parameter", "{message}",
                                  {"message": exc.message.rstrip(".")}) from None
    return params


class UnfittedSpec(BaseModel):
    """An unfitted recalibrator given as a parameter (a step of a composition)."""

    model_config = ConfigDict(extra="forbid")

    method: MethodName
    params: dict[str, Encoded] = Field(default_factory=dict)

    @field_validator("params")
    @classmethod
    def _params_known(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        method = info.data.get("method")
        return params if method is None else _checked_params(method, params)


class UnfittedRecalibrator(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec: UnfittedSpec = Field(alias="__unfitted_recalibrator__")


class RecalibratorDocument(BaseModel):
    """``Recalibrator.to_json()``: method, parameters and fitted state."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["calibdash-recalibrator"]
    version: Literal[JSON_FORMAT_VERSION]  # type: ignore[valid-type]
    method: MethodName
    params: dict[str, Encoded] = Field(default_factory=dict)
    state: dict[str, Encoded]

    @field_validator("state", mode="before")
    @classmethod
    def _state_names(cls, state: Any, info: ValidationInfo) -> Any:
        method = info.data.get("method")
        if not isinstance(state, dict) or method not in REGISTRY:
            return state  # the type error, or the method's own error, says it
        expected = {"n_classes_", *REGISTRY[method].fitted_attributes}
        unknown, missing = sorted(set(state) - expected), sorted(expected - set(state))
        if unknown:
            raise PydanticCustomError("state_names", "{method} has no fitted attribute {names}",
                                      {"method": method, "names": ", ".join(unknown)})
        if missing:
            raise PydanticCustomError("state_names", "{method} state lacks {names}",
                                      {"method": method, "names": ", ".join(missing)})
        n_classes = state["n_classes_"]
        if type(n_classes) is not int or not 2 <= n_classes <= MAX_CLASSES:
            raise PydanticCustomError("n_classes", "n_classes_ must be an integer from 2 to "
                                      "{most}; got {value}",
                                      {"most": f"{MAX_CLASSES:,}", "value": repr(n_classes)[:40]})
        return state

    @field_validator("params")
    @classmethod
    def _params_known(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        method = info.data.get("method")
        return params if method is None else _checked_params(method, params)


class NestedRecalibrator(BaseModel):
    """A fitted recalibrator inside another (composition steps, tree regions)."""

    model_config = ConfigDict(extra="forbid")

    document: RecalibratorDocument = Field(alias="__recalibrator__")


ColumnNames = Annotated[list[StrictStr], Field(min_length=1, max_length=1_000_000)]


class FeaturesSchema(BaseModel):
    """``inputs.features``: the fitted :class:`app.services.encoding.FeatureEncoder`."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["variable", "table", "encoded"]
    columns: ColumnNames
    representation: dict[str, Encoded] | None = None


class InputsSchema(BaseModel):
    """``inputs``: the columns the recalibrator reads and the classes it predicts."""

    model_config = ConfigDict(extra="forbid")

    probability_columns: Annotated[list[StrictStr], Field(min_length=1, max_length=MAX_CLASSES)]
    classes: Annotated[list[StrictStr], Field(min_length=1, max_length=MAX_CLASSES)]
    logits: StrictBool = False
    renormalize: StrictBool = False
    label_column: StrictStr | None = None
    features: FeaturesSchema | None = None


class ModelDocument(RecalibratorDocument):
    """A whole model document: the recalibrator and, from calibdash, its ``inputs``."""

    inputs: InputsSchema | None = None

    @model_validator(mode="before")
    @classmethod
    def _not_too_deep(cls, document: Any) -> Any:
        check_depth(document)
        return document


for _model in (UnfittedSpec, UnfittedRecalibrator, RecalibratorDocument, NestedRecalibrator,
               FeaturesSchema, ModelDocument):
    _model.model_rebuild()


def check_depth(document: Any, max_depth: int = MAX_DEPTH) -> None:
    """Nesting of objects and lists at most ``max_depth``, without recursion.

    The values of arrays are not walked: their nesting is their shape, checked later.
    """
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > max_depth:
            raise PydanticCustomError("too_deep", "objects and lists nest more than {most} "
                                      "deep", {"most": max_depth})
        if isinstance(value, dict):
            children = (v for k, v in value.items() if k != "__ndarray__")
        elif isinstance(value, list):
            children = (v for v in value if isinstance(v, list | dict))
        else:
            continue
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, list | dict))


def _where(location: tuple[int | str, ...]) -> str:
    """A dotted path without the union tags pydantic adds (``<...>``)."""
    parts = [str(part) for part in location
             if not (isinstance(part, str) and part.startswith("<") and part.endswith(">"))]
    return ".".join(parts) or "document"


def validate_document(document: Any, *, max_values: int | None) -> None:
    """Raise :class:`InvalidModelDocument` unless ``document`` matches :class:`ModelDocument`.

    Parameters
    ----------
    document : Any
        Parsed JSON.
    max_values : int or None
        Most numbers the document may hold (``Settings.max_model_values`` for uploads);
        None for documents calibdash wrote itself.
    """
    if not isinstance(document, dict) or document.get("format") != "calibdash-recalibrator":
        raise InvalidModelDocument(
            'not a calibdash recalibrator document: expected a JSON object with "format": '
            '"calibdash-recalibrator".', field="format", problems=[])
    try:
        ModelDocument.model_validate(document, context={"budget": _ValueBudget(max_values)})
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        problems = [f"{_where(item['loc'])}: {item['msg'].rstrip('.')}" for item in errors[:20]]
        more = f" (and {len(errors) - 1} more: see details.problems)" if len(errors) > 1 else ""
        raise InvalidModelDocument(f"invalid model document: {problems[0]}{more}.",
                                   field=_where(errors[0]["loc"]), problems=problems) from None
