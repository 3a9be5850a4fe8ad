"""The proximity forest's trees grown on our threads: the same trees as scikit-learn's
forest, for any number of threads and either builder, and no warning state touched off
the calling thread (the cause of the flaky support test, see
calibcore.heterogeneity._forest_growth)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

import calibcore.heterogeneity._forest_growth as forest_growth
from calibcore.heterogeneity import fit_proximity_forest
from calibcore.heterogeneity._forest_growth import grow_forest

NODE_ARRAYS = ("children_left", "children_right", "feature", "threshold")


def rows(seed: int, n_rows: int, n_features: int, labels: list[int]):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    y = np.array(labels)[(X[:, 0] + rng.normal(size=n_rows) > 0) + (X[:, -1] > 1).astype(int)]
    return X, y


@pytest.mark.parametrize("n_jobs", [None, 1, 2, -1])
@pytest.mark.parametrize("builder", ["private", "public"])
@pytest.mark.parametrize(("n_features", "labels"), [(1, [0, 1, 1]), (5, [0, 2, 3])])
def test_trees_are_the_forests_trees(n_jobs, builder, n_features, labels, monkeypatch):
    if builder == "public":
        monkeypatch.setattr(forest_growth, "Tree", None)
    X, y = rows(n_features, 140, n_features, labels)
    trees = grow_forest(X, y, n_estimators=9, random_state=11, n_jobs=n_jobs)
    forest = RandomForestClassifier(n_estimators=9, random_state=11).fit(X, y)
    assert len(trees) == 9
    for ours, theirs in zip(trees, forest.estimators_, strict=True):
        for name in NODE_ARRAYS:
            np.testing.assert_array_equal(getattr(ours, name), getattr(theirs.tree_, name))


@pytest.fixture
def warning_state_changes_off_the_caller(monkeypatch) -> Iterator[list[str]]:
    """Names of the calls that read-modify-write the process's warning filters
    (``catch_warnings``, ``resetwarnings``, ``simplefilter``, ``filterwarnings``) from
    threads started after this fixture, e.g. a fit's worker threads."""
    existing = {thread.ident for thread in threading.enumerate()}
    calls: list[str] = []

    def note(name: str) -> None:
        if threading.get_ident() not in existing:
            calls.append(f"{name} on {threading.current_thread().name}")

    class RecordedCatchWarnings(warnings.catch_warnings):
        def __enter__(self):
            note("catch_warnings")
            return super().__enter__()

    def recorded(name: str):
        function = getattr(warnings, name)

        def call(*args, **kwargs):
            note(name)
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(warnings, "catch_warnings", RecordedCatchWarnings)
    for name in ("resetwarnings", "simplefilter", "filterwarnings"):
        monkeypatch.setattr(warnings, name, recorded(name))
    yield calls


def test_threads_growing_the_forest_leave_the_warning_filters_alone(
    warning_state_changes_off_the_caller,
):
    # RandomForestClassifier(n_jobs=2).fit ran each tree inside catch_warnings() +
    # resetwarnings() on joblib's worker threads; the filters are one process-wide
    # list, so two workers interleaving emptied it (pytest then reported hundreds of
    # "sklearn.utils.parallel.delayed should be used with ..." warnings) or raised that
    # warning as an error (test_shift_warning_fires_for_a_moved_batch_only, once in CI).
    # The race needs unlucky timing; the calls that make it possible are deterministic.
    X, y = rows(0, 200, 3, [0, 1, 2])
    proba = np.random.default_rng(1).dirichlet(np.ones(3), size=200)
    filters = list(warnings.filters)
    fit_proximity_forest(X, proba, y, n_estimators=8, random_state=0, n_jobs=2,
                         heartbeat=lambda fraction: None)
    assert warning_state_changes_off_the_caller == []
    assert warnings.filters == filters


class Cancelled(Exception):
    """What a cancelled job's progress callback raises."""


def test_a_raising_heartbeat_stops_the_growth():
    X, y = rows(2, 300, 3, [0, 1, 1])
    fractions: list[float] = []

    def heartbeat(fraction: float) -> None:
        fractions.append(fraction)
        if fraction >= 0.25:
            raise Cancelled

    with pytest.raises(Cancelled):
        grow_forest(X, y, n_estimators=40, random_state=0, n_jobs=2, heartbeat=heartbeat)
    assert fractions == [0.0, 1 / 40, 2 / 40, 3 / 40, 4 / 40, 5 / 40, 6 / 40, 7 / 40,
                         8 / 40, 9 / 40, 10 / 40]
    assert not any(thread.name.startswith("calibcore-forest")
                   for thread in threading.enumerate())
