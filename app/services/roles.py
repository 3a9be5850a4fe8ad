"""The roles a user confirms for a file's columns, over the roles inferred for them.

:class:`RoleOverrides` holds what the user chose (the roles screen, the CLI's flags, the
REST form fields); :func:`apply_overrides` merges it with the inferred
:class:`calibcore.data.RoleGuess`; :func:`choose_roles` keeps the roles screen's feature
list in step as roles move between columns.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from calibcore.data import ColumnRoles, RoleGuess, role_problems
from calibcore.exceptions import CalibrationInputError

__all__ = ["RoleChoice", "RoleOverrides", "apply_overrides", "choose_roles", "confirmed_roles",
           "guess_dict"]


@dataclass(frozen=True)
class RoleOverrides:
    """Roles a user chose explicitly; ``None`` keeps the inferred role."""

    label: str | None = None
    probabilities: tuple[str, ...] | None = None
    features: tuple[str, ...] | None = None
    split: str | None = None
    id: str | None = None
    no_split: bool = False
    no_id: bool = False
    logits: bool = False
    renormalize: bool = False
    unlabeled: bool = False
    time: str | None = None
    no_time: bool = False
    models: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    #: Leave out the rows with a missing label or probability instead of refusing the file.
    drop_missing: bool = False
    weight: str | None = None
    no_weight: bool = False
    #: The fraction of negatives a sampled log kept: its negatives weigh 1 / rate.
    negative_rate: float | None = None


def apply_overrides(guess: RoleGuess, overrides: RoleOverrides, columns: list[str]) -> ColumnRoles:
    """Merge inferred roles with the user's choices; features default to the rest."""
    label = None if overrides.unlabeled else (overrides.label or guess.label)
    models = overrides.models if overrides.models is not None else guess.models
    if overrides.models and overrides.probabilities is None:
        probabilities: tuple[str, ...] = tuple(overrides.models[0][1])  # the first given
    else:
        probabilities = overrides.probabilities or guess.probabilities
    if (label is None and not overrides.unlabeled) or not probabilities:
        missing = role_problems(label, probabilities, unlabeled=overrides.unlabeled)
        raise CalibrationInputError(
            " ".join(missing) + f" The file's columns are: {', '.join(columns[:30])}.",
            code="roles_not_found")
    split = None if overrides.no_split else (overrides.split or guess.split)
    id_column = None if overrides.no_id else (overrides.id or guess.id)
    time = None if overrides.no_time else (overrides.time or guess.time)
    weight = None if overrides.no_weight else (overrides.weight or guess.weight)
    if overrides.models is not None and len(overrides.models) == 1:
        raise CalibrationInputError("give at least two models to compare, or none.",
                                    code="invalid_models")
    if models and tuple(probabilities) not in [tuple(group) for _, group in models]:
        if overrides.models:
            raise CalibrationInputError(
                "the probability columns must be one of the models' columns (the dataset's "
                "probabilities are the reference for the other pages).",
                code="invalid_models")
        models = ()  # the chosen probabilities are not one of the inferred models'
    taken = {label, *probabilities, split, id_column, time, weight,
             *(c for _, group in models for c in group)}
    features = overrides.features
    if features is None:
        features = tuple(c for c in columns if c not in taken)
    return ColumnRoles(label=label, probabilities=tuple(probabilities), features=tuple(features),
                       split=split, id=id_column, logits=overrides.logits, time=time,
                       models=tuple((name, tuple(group)) for name, group in models),
                       weight=weight)


@dataclass(frozen=True)
class RoleChoice:
    """The roles screen after the user changed a role.

    Attributes
    ----------
    features : tuple of str
        The feature columns, in file order: without the columns now holding another role,
        with those that just lost one.
    assigned : tuple of str
        The columns holding a role other than feature (to tell next time which lost one).
    problems : tuple of str
        What still stops the dataset from being created.
    """

    features: tuple[str, ...]
    assigned: tuple[str, ...]
    problems: tuple[str, ...]


def choose_roles(columns: list[str], features: list[str], previously_assigned: list[str], *,
                 label: str | None, probabilities: list[str], split: str | None,
                 id_column: str | None, unlabeled: bool,
                 time: str | None = None, weight: str | None = None) -> RoleChoice:
    """Features and problems after a role choice: a column picked as label, probability,
    split, id, time or weight leaves the features; one that loses such a role returns to
    them."""
    assigned = tuple(c for c in (label, *probabilities, split, id_column, time, weight)
                     if c is not None)
    freed = set(previously_assigned) - set(assigned)
    kept = set(features) | freed
    return RoleChoice(
        features=tuple(c for c in columns if c in kept and c not in assigned),
        assigned=assigned,
        problems=role_problems(label, probabilities, split, id_column, unlabeled=unlabeled,
                               time=time, weight=weight))


def confirmed_roles(guess: RoleGuess, overrides: RoleOverrides, columns: list[str],
           dropped: tuple[str, ...]) -> ColumnRoles:
    """The confirmed roles; a role given to a nested (dropped) column is refused by name."""
    chosen = [overrides.label, *(overrides.probabilities or ()), *(overrides.features or ()),
              overrides.split, overrides.id, overrides.time, overrides.weight]
    nested = [column for column in chosen if column is not None and column in dropped]
    if nested:
        raise CalibrationInputError(
            f"column {nested[0]!r} holds nested values (lists, structs or maps), so it was "
            "left out when the file was read; a label, probability, feature, split or id "
            "column must hold plain numbers or text.", code="nested_columns", column=nested[0])
    try:
        return apply_overrides(guess, overrides, columns)
    except CalibrationInputError as exc:
        if not dropped:
            raise
        raise CalibrationInputError(
            f"{exc.message} Columns of nested values were left out: "
            f"{', '.join(map(repr, dropped[:10]))}; labels and probabilities must be plain "
            "numbers or text.", code=exc.code, column=exc.column, rows=exc.rows,
            count=exc.count) from exc


def guess_dict(guess: RoleGuess) -> dict[str, Any]:
    """An inferred role guess as JSON (lists, not tuples)."""
    out = asdict(guess)
    out["probabilities"] = list(guess.probabilities)
    out["features"] = list(guess.features)
    out["problems"] = list(guess.problems)
    out["notes"] = list(guess.notes)
    return out
