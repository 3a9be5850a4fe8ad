"""The trees of ``RandomForestClassifier(n_estimators, random_state)``, grown on our threads.

SWC's proximity forest (Wagstaff & Dietterich 2023, §4) is scikit-learn's random forest
with its defaults. Its trees are grown here rather than by ``RandomForestClassifier.fit``
because that fit, with ``n_jobs`` > 1, runs each tree through
``sklearn.utils.parallel``, whose task wrapper enters ``warnings.catch_warnings()``
and calls ``warnings.resetwarnings()`` in every worker thread. Without context-aware
warnings (Python <= 3.13; 3.14 unless ``-X context_aware_warnings``) the warning
filters are one process-wide list that ``catch_warnings`` swaps out and back without
a lock, so two workers entering and leaving out of order restore each other's lists,
and one worker's ``resetwarnings`` can empty the list another worker (or the caller)
holds. The process then runs with no warning filters at all: each later tree warns
"``sklearn.utils.parallel.delayed`` should be used with
``sklearn.utils.parallel.Parallel``", and where another worker has just restored a
list that turns warnings into errors, that warning is raised and the fit fails.

Same trees, no shared state touched: the seeds are drawn as the forest draws them
(``randint(2**31 - 1)`` per tree from ``check_random_state(random_state)``), each
tree's bootstrap sample is ``RandomState(seed).randint(0, n, n)`` passed as counts
in the sample weights, and scikit-learn's own tree builder grows it with the
forest's settings (Gini, ``max_features="sqrt"``, fully grown). The builder
releases the GIL and touches no Python warning state, so the trees grow in
parallel on a thread pool. The public ``DecisionTreeClassifier`` (the fallback
should the private builder's signatures change) checks its targets inside
``warnings.catch_warnings()``, so that path stays on the calling thread.

Private: callers validate inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np
from joblib import effective_n_jobs
from numpy.typing import NDArray
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils import check_random_state

try:  # scikit-learn's tree builder without the per-fit validation (fallback below)
    from sklearn.tree._criterion import Gini
    from sklearn.tree._splitter import BestSplitter
    from sklearn.tree._tree import DepthFirstTreeBuilder, Tree
except ImportError:  # pragma: no cover - depends on the installed scikit-learn
    Gini = BestSplitter = DepthFirstTreeBuilder = Tree = None

_INT32_MAX = int(np.iinfo(np.int32).max)


def grow_forest(
    features: NDArray[np.float64],
    labels: NDArray[np.intp],
    *,
    n_estimators: int,
    random_state: int,
    n_jobs: int | None,
    heartbeat: Callable[[float], None] | None = None,
    sample_weight: NDArray[np.float64] | None = None,
) -> list[Any]:
    """The trees of ``RandomForestClassifier(n_estimators, random_state).fit(features, labels,
    sample_weight=sample_weight)``.

    Parameters
    ----------
    features : ndarray of shape (n, d), finite
    labels : ndarray of shape (n,)
    n_estimators : int
    random_state : int
    n_jobs : int or None
        Threads, as joblib's ``n_jobs``; the trees do not depend on it.
    heartbeat : callable, optional
        Called on the calling thread with the fraction of trees grown, before the
        first and after each tree; it may raise to stop (trees not started are dropped).
    sample_weight : ndarray of shape (n,), optional
        Row weights (positive): each tree's bootstrap sample draws n rows with
        probability proportional to them, as scikit-learn 1.9's forest does.

    Returns
    -------
    list of sklearn ``Tree``
        Node for node the forest's ``estimators_[i].tree_``.
    """
    values = np.ascontiguousarray(features, dtype=np.float32)
    classes, encoded = np.unique(labels, return_inverse=True)
    generator = check_random_state(random_state)
    seeds = [int(generator.randint(_INT32_MAX)) for _ in range(n_estimators)]
    beat = heartbeat if heartbeat is not None else _ignore
    if Tree is not None:
        targets = encoded.astype(np.float64).reshape(-1, 1)
        private = partial(_grow_private, values, targets, np.array([classes.size], dtype=np.intp),
                          sample_weight=sample_weight)
        try:
            return _grow_all(private, seeds, effective_n_jobs(n_jobs), beat)
        except TypeError:  # pragma: no cover - private signatures changed
            pass
    return _grow_all(partial(_grow_public, values, encoded, sample_weight=sample_weight),
                     seeds, 1, beat)


def _ignore(fraction: float) -> None:
    """The heartbeat when there is none."""


def _grow_all(
    grow_tree: Callable[[int], Any], seeds: list[int], threads: int,
    heartbeat: Callable[[float], None],
) -> list[Any]:
    """``grow_tree(seed)`` for every seed, in order, on up to ``threads`` threads."""
    heartbeat(0.0)
    trees: list[Any] = []
    if min(threads, len(seeds)) <= 1:
        for seed in seeds:
            trees.append(grow_tree(seed))
            heartbeat(len(trees) / len(seeds))
        return trees
    pool = ThreadPoolExecutor(min(threads, len(seeds)), thread_name_prefix="calibcore-forest")
    try:
        futures = [pool.submit(grow_tree, seed) for seed in seeds]
        for future in futures:
            trees.append(future.result())
            heartbeat(len(trees) / len(seeds))
    finally:  # on a cancel (or an error), drop the trees not started
        pool.shutdown(wait=True, cancel_futures=True)
    return trees


def _bootstrap_counts(seed: int, n_rows: int,
                      sample_weight: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """How often each row is drawn into the tree's bootstrap sample, as the forest draws it:
    n rows uniformly, or, with weights, n rows with probability proportional to the weight
    (scikit-learn 1.9's ``_generate_sample_indices``); the tree weighs rows by the counts."""
    state = np.random.RandomState(seed)
    if sample_weight is None:
        draws = state.randint(0, n_rows, n_rows)
    else:
        draws = state.choice(n_rows, n_rows, replace=True,
                             p=sample_weight / np.sum(sample_weight))
    return np.bincount(draws, minlength=n_rows).astype(np.float64)


def _max_features(n_features: int) -> int:
    """The forest's ``max_features="sqrt"``."""
    return max(1, int(np.sqrt(n_features)))


def _grow_private(
    values: NDArray[np.float32], targets: NDArray[np.float64], classes: NDArray[np.intp],
    seed: int, *, sample_weight: NDArray[np.float64] | None = None,
) -> Any:
    """One tree by scikit-learn's builder, set up as ``DecisionTreeClassifier._fit`` does
    (``targets``: class indices as an (n, 1) float column; ``classes``: [n_classes])."""
    # The splitter draws its seed from RandomState(seed), as the tree's fit does.
    splitter = BestSplitter(Gini(1, classes), _max_features(values.shape[1]), 1, 0.0,
                            np.random.RandomState(seed), None)
    builder = DepthFirstTreeBuilder(splitter, 2, 1, 0.0, _INT32_MAX, 0.0)
    tree = Tree(values.shape[1], classes, 1)
    builder.build(tree, values, targets,
                  _bootstrap_counts(seed, values.shape[0], sample_weight), None)
    return tree


def _grow_public(values: NDArray[np.float32], encoded: NDArray[np.intp], seed: int, *,
                 sample_weight: NDArray[np.float64] | None = None) -> Any:
    """One tree by the public estimator (calling thread only: see the module docstring)."""
    tree = DecisionTreeClassifier(max_features="sqrt", random_state=seed)
    weights = _bootstrap_counts(seed, values.shape[0], sample_weight)
    return tree.fit(values, encoded, sample_weight=weights).tree_
