"""The roles screen's bookkeeping: a role choice moves columns out of (and back into) the
features and updates what still stops the dataset from being created."""

from __future__ import annotations

from app.services.roles import RoleChoice, choose_roles
from calibcore.data import NO_LABEL, NO_PROBABILITIES

COLUMNS = ["age", "bought", "member", "score", "q", "split"]


def choose(features: list[str], previously: list[str], **roles: object) -> RoleChoice:
    chosen: dict[str, object] = {"label": None, "probabilities": [], "split": None,
                                 "id_column": None, "unlabeled": False, **roles}
    return choose_roles(COLUMNS, features, previously, **chosen)  # type: ignore[arg-type]


def test_a_column_picked_as_label_leaves_the_features_and_the_banner_clears() -> None:
    start = choose(["age", "bought", "member", "q"], ["score", "split"],
                   probabilities=["score"], split="split")
    assert start.problems == (NO_LABEL,)
    picked = choose(list(start.features), list(start.assigned), label="bought",
                    probabilities=["score"], split="split")
    assert picked == RoleChoice(features=("age", "member", "q"),
                                assigned=("bought", "score", "split"), problems=())


def test_a_column_that_loses_its_role_returns_to_the_features() -> None:
    changed = choose(["age", "member", "q"], ["bought", "score", "split"], label="member",
                     probabilities=["q"], split=None)
    assert changed.features == ("age", "bought", "score", "split")  # file order
    assert changed.assigned == ("member", "q") and changed.problems == ()


def test_features_the_user_unticked_stay_unticked() -> None:
    assert choose(["age"], ["bought", "score"], label="bought",
                  probabilities=["score"]).features == ("age",)


def test_problems_of_the_choice() -> None:
    assert choose([], []).problems == (NO_LABEL, NO_PROBABILITIES)
    assert choose([], [], probabilities=["q"], unlabeled=True).problems == ()
    assert choose([], [], label="q", probabilities=["q"]).problems == (
        "Column 'q' is chosen as label and probability: give it one role.",)
