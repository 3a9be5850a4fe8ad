"""The names a prediction table's columns go by: what a label, a probability, a split,
an id or a time column is usually called, and how class columns and several models'
columns are told apart by name. :mod:`calibcore.data.roles` infers roles from these and
from the values."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "BINARY_PROBABILITY_NAMES",
    "CLASS_COLUMN_FORMS",
    "ID_NAMES",
    "LABEL_NAMES",
    "PAIRED_PROBABILITY_FORMS",
    "PROBABILITY_PREFIXES",
    "PROBABILITY_SUFFIXES",
    "SPLIT_NAMES",
    "TIME_NAMES",
    "WEIGHT_NAMES",
    "column_class_parts",
    "model_groups",
    "natural_order",
    "normalize_name",
    "says_probability",
]

LABEL_NAMES = ("y_true", "y", "label", "labels", "target", "class", "truth", "ground_truth",
               "outcome", "true_label", "true_class", "y_actual", "actual", "observed")


#: A single column holding P(positive class), in order of preference. Names that say
#: "probability" are taken on their name; the others only when their values are
#: probabilities (see :func:`says_probability`), since ``y_pred`` often holds hard labels.
BINARY_PROBABILITY_NAMES = (
    "y_prob", "y_proba", "y_pred_proba", "y_pred_prob", "pred_proba", "pred_prob",
    "predicted_proba", "predicted_probability", "proba", "prob", "probability", "p", "p1",
    "prob_1", "proba_1", "p_1", "prob_pos", "prob_positive", "p_pos",
    "y_score", "score", "pred_score", "y_pred", "y_hat", "yhat", "pred", "prediction",
    "predicted", "output")


#: P(<target>) named after the binary label column it goes with: delayed -> p_delayed.
PAIRED_PROBABILITY_FORMS = ("{}_prob", "{}_proba", "{}_probability", "p_{}", "prob_{}",
                            "proba_{}", "{}_score", "pred_{}")


#: Class probability columns named ``<prefix><class>``: proba_0, prob_cat, p1.
PROBABILITY_PREFIXES = ("y_proba_", "y_prob_", "proba_", "probability_", "prob_", "pred_",
                        "score_", "p_", "proba", "prob", "p")


#: Class probability columns named ``<class><suffix>``: cat_proba, dog_proba.
PROBABILITY_SUFFIXES = ("_proba", "_prob", "_probability", "_score")


#: Every way of naming a class's probability column, prefixes first.
CLASS_COLUMN_FORMS = (*(prefix + "{}" for prefix in PROBABILITY_PREFIXES),
                      *("{}" + suffix for suffix in PROBABILITY_SUFFIXES))


SPLIT_NAMES = ("split", "fold", "subset", "set", "partition")


ID_NAMES = ("id", "row_id", "sample_id", "example_id", "uid", "uuid", "key", "index")


#: When each prediction was made (dates, datetimes, or an ordered number).
TIME_NAMES = ("time", "timestamp", "datetime", "date", "event_time", "prediction_time",
              "scored_at", "created_at", "ts")


#: Row weights (survey, importance or downsampling weights), compared case-insensitively.
WEIGHT_NAMES = ("weight", "weights", "sample_weight", "sample_weights")


def normalize_name(name: str) -> str:
    """Lower case, spaces and hyphens as underscores: how names are compared."""
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def _find_named(columns: Sequence[str], names: Sequence[str]) -> str | None:
    by_normal = {normalize_name(c): c for c in columns}
    for candidate in names:
        if candidate in by_normal:
            return by_normal[candidate]
    return None


def says_probability(name: str) -> bool:
    """Whether a column name says it holds probabilities (p, prob, proba or probability as a
    word of it: p_delayed, cat_proba, y_prob, p1), not a score or a prediction (score,
    y_pred, pred_delayed), which may hold anything."""
    return re.search(r"(^|_)(p|prob|proba|probability)\d*(_|$)", normalize_name(name)) is not None


def _class_part(form: str, name: str) -> str | None:
    """The class in ``name`` written as ``form``: ("proba_{}", "proba_cat") -> "cat"."""
    before, after = form.split("{}")
    if len(name) > len(before) + len(after) and name.startswith(before) and name.endswith(after):
        return name[len(before):len(name) - len(after)]
    return None


def column_class_parts(columns: Sequence[str]) -> list[tuple[str, ...]]:
    """The class names in ``columns``, for each of :data:`CLASS_COLUMN_FORMS` that names
    all of them (proba_0, proba_1 -> ("0", "1")), in the case the columns use."""
    named = [str(c).strip() for c in columns]
    parts = []
    for form in CLASS_COLUMN_FORMS:
        if all(_class_part(form, normalize_name(name)) for name in named):
            before, after = form.split("{}")
            parts.append(tuple(name[len(before):len(name) - len(after)] for name in named))
    return parts


def _class_columns(columns: Sequence[str], class_names: Sequence[str]) -> tuple[str, ...]:
    """A column ``<prefix><class>`` or ``<class><suffix>`` for every class, trying the known
    forms in turn."""
    by_normal = {normalize_name(c): c for c in columns}
    wanted = [normalize_name(c) for c in class_names]
    for form in CLASS_COLUMN_FORMS:
        found = [by_normal.get(form.format(name)) for name in wanted]
        if all(found):
            return tuple(str(c) for c in found)
    return ()


def _class_groups(columns: Sequence[str], forms: Sequence[str]
                  ) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Groups of >= 2 columns written in one of ``forms``, with their (normalized) class
    names, largest first."""
    groups = []
    for form in forms:
        parts = {c: _class_part(form, normalize_name(c)) for c in columns}
        named = {c: part for c, part in parts.items() if part is not None}
        if len(named) >= 2:
            groups.append((tuple(named), tuple(named.values())))
    return sorted(groups, key=lambda group: len(group[0]), reverse=True)


#: ``<model>_<word>_<class>`` or ``<model>_<word>`` (one column: P(positive)).
_MODEL_COLUMN = re.compile(r"^(?P<model>.+?)_(?P<word>proba|prob|probability|p|score)"
                           r"(?:_(?P<cls>[^_]+))?$")


def model_groups(columns: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Several models' probability columns of the same classes, in file order:
    ``gbm_proba_0, gbm_proba_1, lr_proba_0, lr_proba_1`` gives (gbm, ...), (lr, ...);
    ``gbm_prob, lr_prob`` (one column each) gives two binary models. At least two models
    with the same class parts, else nothing."""
    groups: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
    for column in columns:
        match = _MODEL_COLUMN.match(normalize_name(column))
        if match:
            key = (match["model"], match["word"])
            groups.setdefault(key, []).append((column, match["cls"]))
    shapes: dict[tuple[str, tuple[str | None, ...]], list[tuple[str, tuple[str, ...]]]] = {}
    for (model, word), members in groups.items():
        classes = tuple(cls for _, cls in members)
        if (len(members) == 1 and classes != (None,)) or (None in classes
                                                          and len(members) > 1):
            continue
        shapes.setdefault((word, classes), []).append(
            (model, tuple(column for column, _ in members)))
    best = max(shapes.values(), key=len, default=[])
    return tuple(best) if len(best) >= 2 else ()


def natural_order(value: str) -> tuple[int, float | str]:
    """Sort key: numbers by value before other names."""
    try:
        return (0, float(value))
    except ValueError:
        return (1, value)
