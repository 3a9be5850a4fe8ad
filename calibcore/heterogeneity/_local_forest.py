"""One neighbourhood's seven pruned bagged forests, grown, pruned and scored in compiled code.

Hidden heterogeneity needs, for each distinct neighbourhood, the OOB accuracy of
``RandomForestClassifier(n_estimators=100, max_features=None, oob_score=True,
ccp_alpha=a, random_state=seed)`` for seven alphas, and the in-sample
probabilities of the best one (:mod:`calibcore.heterogeneity._bagging` explains why the seven
share their unpruned trees). Profiling HH on default_nb put 60% of the time in
scikit-learn's tree builder (2 ms per tree of 1,500 rows, most of it sorting the
node's rows for each feature at every node) and 25% in numpy bookkeeping around
it (bootstrap counts, ``apply``, OOB sums). This module does all of it in one
numba kernel per chunk of trees, without the GIL, and keeps no tree once it has
been scored:

* the rows are sorted by each feature once per neighbourhood; a tree keeps, per
  feature, its in-bag rows in that order and partitions the lists stably at each
  split (linear work per level instead of a sort per node and feature);
* the split search is scikit-learn's ``BestSplitter`` with the Gini criterion,
  step for step: the same feature draws (``rand_r`` and the Fisher-Yates walk
  with known and newly found constant features), the same tie skipping
  (``FEATURE_THRESHOLD`` in float32), the same floating-point expressions for
  impurities and the proxy improvement, the same strict ``>`` between candidates
  and the same depth-first node numbering. Bootstrap weights are integer counts,
  so every weighted class sum is an exact integer and the order in which rows
  are added cannot change a bit;
* pruning replays scikit-learn's weakest-link sequence per tree (as
  :func:`calibcore.heterogeneity._bagging._collapse_alphas`), with a tournament tree
  instead of a scan over every node at every step;
* OOB and in-sample probabilities are accumulated tree by tree in the forest's
  order, for every alpha.

Private: callers validate inputs. The results equal the scikit-learn loop to
the last bit (tests/calibcore/heterogeneity/test_heterogeneity.py pins it).
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

#: ``np.finfo(np.float64).eps``: scikit-learn's tree builder treats impurity <= EPSILON as pure.
_EPSILON = float(np.finfo(np.float64).eps)
_LEAF = -1
_UNDEFINED = -2


@numba.njit(nogil=True, cache=True)
def bootstrap_counts(raw: NDArray[np.uint32], n_rows: int) -> tuple[NDArray[np.int32],
                                                                       NDArray[np.bool_]]:
    """``bincount(RandomState(seed).randint(0, n_rows, n_rows))`` per tree from its raw stream.

    Masked rejection sampling as numpy's legacy generator does it; ``complete`` is
    False for trees whose stream ran short (the caller draws those itself).
    """
    n_trees = raw.shape[0]
    counts = np.zeros((n_trees, n_rows), dtype=np.int32)
    complete = np.ones(n_trees, dtype=np.bool_)
    largest = n_rows - 1
    mask = 0
    while mask < largest:
        mask = (mask << 1) | 1
    for tree in range(n_trees):
        drawn = 0
        for position in range(raw.shape[1]):
            if drawn == n_rows:
                break
            value = np.int64(raw[tree, position]) & mask
            if value <= largest:
                counts[tree, value] += 1
                drawn += 1
        complete[tree] = drawn == n_rows
    return counts, complete


@numba.njit(nogil=True, cache=True, inline="always")
def _rand_int(low: int, high: int, state: NDArray[np.int64]) -> int:
    """``sklearn.tree._utils.rand_int``: xorshift ``our_rand_r`` on a uint32 state."""
    seed = state[0]
    if seed == 0:
        seed = 1
    seed ^= (seed << 13) & 0xFFFFFFFF
    seed ^= seed >> 17
    seed ^= (seed << 5) & 0xFFFFFFFF
    state[0] = seed
    return low + (seed % 0x80000000) % (high - low)


@numba.njit(nogil=True, cache=True, inline="always")
def _stable_partition(rows: NDArray[np.intp], start: int, end: int,
                      goes_left: NDArray[np.bool_], scratch: NDArray[np.intp]) -> None:
    """Rows of ``rows[start:end]`` going left first, each side in its previous order.

    Without a branch per row (which way a row goes is a coin flip in every list but
    the split feature's): each row is written to both sides and only the side it goes
    to advances. The left write lands at or before ``position``, already read.
    """
    n_left = 0
    n_right = 0
    for position in range(start, end):
        row = rows[position]
        to_left = int(goes_left[row])
        rows[start + n_left] = row
        scratch[n_right] = row
        n_left += to_left
        n_right += 1 - to_left
    for position in range(n_right):
        rows[start + n_left + position] = scratch[position]


@numba.njit(nogil=True, cache=True, inline="always")
def _proxy(left_sums, sums, weighted_left, weighted, n_classes):
    """``Gini.proxy_impurity_improvement`` with scikit-learn's floating-point expressions."""
    weighted_right = weighted - weighted_left
    squares_left = squares_right = 0.0
    for klass in range(n_classes):
        count = left_sums[klass]
        squares_left += count * count
        count = sums[klass] - left_sums[klass]
        squares_right += count * count
    gini_left = 1.0 - squares_left / (weighted_left * weighted_left)
    gini_right = 1.0 - squares_right / (weighted_right * weighted_right)
    return -weighted_right * gini_right - weighted_left * gini_left


@numba.njit(nogil=True, cache=True, inline="always")
def _scan_binary(features, positive, weight, rows, column, start, end, total_0, total_1,
                 weighted, best_proxy, best_feature, best_position, best_threshold):
    """The split search over one feature for two classes, the class sums in registers.

    The same positions, floating-point expressions and strict ``>`` as the general loop
    in :func:`_grow_tree`; returns the best split so far. Class 1's sum adds each row's
    ``positive`` (its weight, an integer count, or an exact 0.0: no branch on the label)
    and class 0's is the difference from the node's weight, exact for integer sums.
    Inlined, as are :func:`_rand_int` and :func:`_stable_partition`: called once per
    node and feature, their calls cost about a tenth of a forest's time.
    """
    feature_threshold = np.float32(1e-7)
    left_0 = left_1 = weighted_left = 0.0
    added = start
    position = start
    previous = features[rows[start], column]  # the value at position - 1 below
    while position < end:
        position += 1
        while position < end:
            current = features[rows[position], column]
            if current > previous + feature_threshold:
                break
            previous = current
            position += 1
        if position >= end:
            break
        while added < position:
            row = rows[added]
            left_1 += positive[row]
            weighted_left += weight[row]
            added += 1
        left_0 = weighted_left - left_1  # exact: sums of integer counts
        weighted_right = weighted - weighted_left
        right_0 = total_0 - left_0
        right_1 = total_1 - left_1
        squares_left = 0.0 + left_0 * left_0
        squares_left += left_1 * left_1
        squares_right = 0.0 + right_0 * right_0
        squares_right += right_1 * right_1
        gini_left = 1.0 - squares_left / (weighted_left * weighted_left)
        gini_right = 1.0 - squares_right / (weighted_right * weighted_right)
        proxy = -weighted_right * gini_right - weighted_left * gini_left
        if proxy > best_proxy:
            best_proxy = proxy
            best_feature, best_position = column, position
            best_threshold = np.float64(previous) / 2.0 + np.float64(current) / 2.0
        previous = current
    return best_proxy, best_feature, best_position, best_threshold


@numba.njit(nogil=True, cache=True)
def _grow_tree(features, labels, n_classes, weight, order, seed, total_weight,
               left, right, feature, threshold, value, impurity, node_weight,
               sorted_rows, scratch, goes_left, row_leaf):
    """Grow one tree as scikit-learn's ``DepthFirstTreeBuilder`` + ``BestSplitter`` + Gini.

    Node arrays are filled in scikit-learn's node order; ``row_leaf`` gets the leaf
    of each in-bag row (rows out of the bag are left as they were). Returns the node
    count, or -1 if a split's partition disagreed with its position (never expected;
    the caller then uses scikit-learn itself).

    A node's weighted class sums come from its parent's split (the left side's sums
    and their difference from the parent's): the weights are integer counts, so they
    equal the sums over the node's rows exactly.
    """
    n_features = features.shape[1]
    feature_threshold = np.float32(1e-7)
    n_in = 0
    for column in range(n_features):
        n_in = 0
        for row in order[column]:  # in-bag rows, without a branch on the bootstrap draw
            sorted_rows[column, n_in] = row
            n_in += np.intp(weight[row] != 0)
    positive = weight * labels  # two classes: each row's weight if its label is 1, else 0.0
    drawn = np.arange(n_features)
    constant = np.empty(n_features, dtype=np.intp)
    state = np.array([seed], dtype=np.int64)
    capacity = 2 * n_in + 2
    stack_start = np.empty(capacity, dtype=np.intp)
    stack_end = np.empty(capacity, dtype=np.intp)
    stack_parent = np.empty(capacity, dtype=np.intp)
    stack_is_left = np.empty(capacity, dtype=np.bool_)
    stack_impurity = np.empty(capacity)
    stack_constants = np.empty(capacity, dtype=np.intp)
    stack_sums = np.empty((capacity, n_classes))
    sums = np.zeros(n_classes)
    left_sums = np.zeros(n_classes)
    stack_sums[0, :] = 0.0
    for position in range(n_in):
        row = sorted_rows[0, position]
        stack_sums[0, labels[row]] += weight[row]
    stack_start[0], stack_end[0], stack_parent[0] = 0, n_in, -1
    stack_is_left[0], stack_impurity[0], stack_constants[0] = False, np.inf, 0
    top = 1
    n_nodes = 0
    while top > 0:
        top -= 1
        start, end = stack_start[top], stack_end[top]
        parent, is_left = stack_parent[top], stack_is_left[top]
        node_impurity, n_known = stack_impurity[top], stack_constants[top]
        weighted = 0.0
        for klass in range(n_classes):
            sums[klass] = stack_sums[top, klass]
            weighted += sums[klass]
        if n_nodes == 0:
            squares = 0.0
            for klass in range(n_classes):
                squares += sums[klass] * sums[klass]
            node_impurity = 1.0 - squares / (weighted * weighted)
        is_leaf = end - start < 2 or node_impurity <= _EPSILON
        best_feature, best_position, best_threshold = _UNDEFINED, end, float(_UNDEFINED)
        impurity_left = impurity_right = 0.0
        n_total = n_known
        if not is_leaf:
            # node_split_best: draw features without replacement (Fisher-Yates on
            # ``drawn``), skipping known constant ones and recording new ones.
            best_proxy = -np.inf
            f_i = n_features
            n_visited = n_found = n_drawn = 0
            while f_i > n_total and (n_visited < n_features
                                     or n_visited <= n_found + n_drawn):
                n_visited += 1
                f_j = _rand_int(n_drawn, f_i - n_found, state)
                if f_j < n_known:
                    drawn[n_drawn], drawn[f_j] = drawn[f_j], drawn[n_drawn]
                    n_drawn += 1
                    continue
                f_j += n_found
                column = drawn[f_j]
                rows = sorted_rows[column]
                if (features[rows[end - 1], column]
                        <= features[rows[start], column] + feature_threshold):
                    drawn[f_j], drawn[n_total] = drawn[n_total], drawn[f_j]
                    n_found += 1
                    n_total += 1
                    continue
                f_i -= 1
                drawn[f_i], drawn[f_j] = drawn[f_j], drawn[f_i]
                if n_classes == 2:
                    best_proxy, best_feature, best_position, best_threshold = _scan_binary(
                        features, positive, weight, rows, column, start, end, sums[0], sums[1],
                        weighted, best_proxy, best_feature, best_position, best_threshold)
                    continue
                left_sums[:] = 0.0
                weighted_left = 0.0
                added = start
                position = start
                while position < end:
                    position += 1
                    while (position < end and features[rows[position], column]
                           <= features[rows[position - 1], column] + feature_threshold):
                        position += 1
                    if position >= end:
                        break
                    while added < position:
                        row = rows[added]
                        left_sums[labels[row]] += weight[row]
                        weighted_left += weight[row]
                        added += 1
                    proxy = _proxy(left_sums, sums, weighted_left, weighted, n_classes)
                    if proxy > best_proxy:
                        best_proxy = proxy
                        best_feature, best_position = column, position
                        best_threshold = (np.float64(features[rows[position - 1], column]) / 2.0
                                          + np.float64(features[rows[position], column]) / 2.0)
            drawn[:n_known] = constant[:n_known]
            constant[n_known:n_known + n_found] = drawn[n_known:n_known + n_found]
            if best_position < end:
                # The split feature's list is sorted by the value compared with the
                # threshold, so the rows going left are the first ones exactly when the
                # two values either side of the split position fall either side of it.
                rows = sorted_rows[best_feature]
                if not (features[rows[best_position - 1], best_feature] <= best_threshold
                        < features[rows[best_position], best_feature]):
                    return -1
                left_sums[:] = 0.0
                weighted_left = 0.0
                for position in range(start, best_position):
                    row = rows[position]
                    goes_left[row] = True
                    left_sums[labels[row]] += weight[row]
                    weighted_left += weight[row]
                for position in range(best_position, end):
                    goes_left[rows[position]] = False
                for column in range(n_features):
                    # the split feature's list is sorted by the value split on: its left
                    # rows come first already, and a stable partition leaves it as it is
                    if column != best_feature:
                        _stable_partition(sorted_rows[column], start, end, goes_left, scratch)
                weighted_right = weighted - weighted_left
                squares_left = squares_right = 0.0
                for klass in range(n_classes):
                    count = left_sums[klass]
                    squares_left += count * count
                    count = sums[klass] - left_sums[klass]
                    squares_right += count * count
                impurity_left = 1.0 - squares_left / (weighted_left * weighted_left)
                impurity_right = 1.0 - squares_right / (weighted_right * weighted_right)
                improvement = (weighted / total_weight) * (
                    node_impurity - (weighted_right / weighted * impurity_right)
                    - (weighted_left / weighted * impurity_left))
                is_leaf = improvement + _EPSILON < 0.0
            else:
                is_leaf = True
        node = n_nodes
        n_nodes += 1
        if parent >= 0:
            if is_left:
                left[parent] = node
            else:
                right[parent] = node
        left[node] = right[node] = _LEAF
        impurity[node] = node_impurity
        node_weight[node] = weighted
        for klass in range(n_classes):
            value[node, klass] = sums[klass] / weighted
        if is_leaf:
            feature[node], threshold[node] = _UNDEFINED, float(_UNDEFINED)
            for position in range(start, end):
                row_leaf[sorted_rows[0, position]] = node
            continue
        feature[node], threshold[node] = best_feature, best_threshold
        stack_start[top], stack_end[top], stack_parent[top] = best_position, end, node
        stack_is_left[top], stack_impurity[top] = False, impurity_right
        stack_constants[top] = n_total
        for klass in range(n_classes):
            stack_sums[top, klass] = sums[klass] - left_sums[klass]
        top += 1
        stack_start[top], stack_end[top], stack_parent[top] = start, best_position, node
        stack_is_left[top], stack_impurity[top] = True, impurity_left
        stack_constants[top] = n_total
        for klass in range(n_classes):
            stack_sums[top, klass] = left_sums[klass]
        top += 1
    return n_nodes


@numba.njit(nogil=True, cache=True, inline="always")
def _weaker(first, second, alpha):
    """Of two nodes (``first`` the lower id), the weaker link: smaller alpha, else lower id."""
    return first if alpha[first] <= alpha[second] else second


@numba.njit(nogil=True, cache=True, inline="always")
def _set_alpha(winner, alpha, size, node, new_alpha):
    """Give ``node`` a new effective alpha and replay its matches up the tournament.

    A match still won by the same other node changes nothing above it: stop there.
    """
    alpha[node] = new_alpha
    slot = (size + node) >> 1
    while slot >= 1:
        won = _weaker(winner[2 * slot], winner[2 * slot + 1], alpha)
        if won == winner[slot] and won != node:
            return
        winner[slot] = won
        slot >>= 1


@numba.njit(nogil=True, cache=True)
def _collapse_alphas(left, right, risk, n_nodes, max_alpha):
    """The smallest ``ccp_alpha`` at which scikit-learn's pruning collapses each node of a tree.

    ``sklearn.tree._tree._cost_complexity_prune`` step by step: branch risks summed
    leaf by leaf in node order, then the weakest link (the first node, in node
    order, with the smallest ``(R(t) - R(T_t)) / (|T_t| - 1)``) pruned one at a
    time and its ancestors updated by differences, while the effective alpha is
    at most ``max_alpha``. A tournament tree over the node ids (each match won by
    the smaller alpha, the lower id on a tie: scikit-learn's first minimum in node
    order) finds the weakest link; a node's alpha changes in place (inf once it is
    no longer a candidate) and only its matches are replayed, with no allocation.
    Node t collapses for every alpha >= the running maximum of the effective
    alphas up to its step; inf where that exceeds ``max_alpha``.
    """
    collapse_at = np.full(n_nodes, np.inf)
    parent = np.full(n_nodes, -1, dtype=np.intp)
    for node in range(n_nodes):
        if left[node] >= 0:
            parent[left[node]] = node
            parent[right[node]] = node
    branch = np.zeros(n_nodes)
    n_leaves = np.zeros(n_nodes, dtype=np.intp)
    candidate = left[:n_nodes] >= 0
    for leaf in range(n_nodes):
        if left[leaf] >= 0:
            continue
        branch[leaf] = risk[leaf]
        node = leaf
        while node != 0:
            node = parent[node]
            branch[node] += risk[leaf]
            n_leaves[node] += 1
    size = 1
    while size < n_nodes:
        size *= 2
    alpha = np.full(size, np.inf)
    for node in range(n_nodes):
        if candidate[node]:
            alpha[node] = (risk[node] - branch[node]) / (n_leaves[node] - 1)
    winner = np.empty(2 * size, dtype=np.intp)
    for node in range(size):
        winner[size + node] = node
    for slot in range(size - 1, 0, -1):
        winner[slot] = _weaker(winner[2 * slot], winner[2 * slot + 1], alpha)
    stack = np.empty(n_nodes, dtype=np.intp)
    running_max = -np.inf
    while candidate[0]:
        weakest = winner[1]
        effective = alpha[weakest]
        running_max = max(running_max, effective)
        if running_max > max_alpha:
            break
        collapse_at[weakest] = running_max
        stack[0] = weakest
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            if left[node] >= 0:  # leaves were never candidates
                candidate[node] = False
                _set_alpha(winner, alpha, size, node, np.inf)
                stack[top] = left[node]
                stack[top + 1] = right[node]
                top += 2
        pruned = n_leaves[weakest] - 1
        n_leaves[weakest] = 0
        difference = risk[weakest] - branch[weakest]
        branch[weakest] = risk[weakest]
        node = weakest
        while node != 0:
            node = parent[node]
            n_leaves[node] -= pruned
            branch[node] += difference
            _set_alpha(winner, alpha, size, node,
                       (risk[node] - branch[node]) / (n_leaves[node] - 1))
    return collapse_at


@numba.njit(nogil=True, cache=True)
def score_trees(features, labels, n_classes, counts, splitter_seeds, order, alphas,
                oob_sums, oob_votes, in_sums):
    """Grow, prune and score a chunk of a forest's trees, in order; accumulate their votes.

    Parameters
    ----------
    features : ndarray of shape (n, d), float32
    labels : ndarray of shape (n,)
        Class indices 0..n_classes-1.
    counts : ndarray of shape (n_chunk, n), int32
        Bootstrap counts of the chunk's trees.
    splitter_seeds : ndarray of shape (n_chunk,)
    order : ndarray of shape (d, n)
        The rows sorted by each feature.
    alphas : ndarray of shape (m,)
    oob_sums, in_sums : ndarray of shape (n, m, n_classes)
        Sums over trees of each pruned tree's leaf value for rows out of its bag
        (``oob_sums``) and for every row (``in_sums``), row-major (a row's alphas
        side by side); updated in place.
    oob_votes : ndarray of shape (n,)
        Trees each row was out of bag for; updated in place.

    Returns
    -------
    bool
        False if a tree could not be grown here (the caller falls back).
    """
    n_rows = features.shape[0]
    n_alphas = alphas.size
    capacity = 2 * n_rows + 1
    left = np.empty(capacity, dtype=np.intp)
    right = np.empty(capacity, dtype=np.intp)
    feature = np.empty(capacity, dtype=np.intp)
    threshold = np.empty(capacity)
    value = np.empty((capacity, n_classes))
    impurity = np.empty(capacity)
    node_weight = np.empty(capacity)
    risk = np.empty(capacity)
    leaf_of = np.empty((capacity, n_alphas), dtype=np.intp)
    sorted_rows = np.empty((features.shape[1], n_rows), dtype=np.intp)
    scratch = np.empty(n_rows, dtype=np.intp)
    goes_left = np.zeros(n_rows, dtype=np.bool_)
    row_leaf = np.empty(n_rows, dtype=np.intp)
    total_weight = float(n_rows)
    max_alpha = alphas.max()
    for tree in range(counts.shape[0]):
        weight = counts[tree].astype(np.float64)
        n_nodes = _grow_tree(features, labels, n_classes, weight, order, splitter_seeds[tree],
                             total_weight, left, right, feature, threshold, value, impurity,
                             node_weight, sorted_rows, scratch, goes_left, row_leaf)
        if n_nodes < 0:
            return False
        for node in range(n_nodes):
            risk[node] = node_weight[node] * impurity[node] / node_weight[0]
        collapse_at = _collapse_alphas(left, right, risk, n_nodes, max_alpha)
        # Pruned leaf of each node for each alpha: parents precede children in node order.
        for column in range(n_alphas):
            leaf_of[0, column] = 0
        for node in range(n_nodes):
            if left[node] < 0:
                continue
            for column in range(n_alphas):
                inherited = leaf_of[node, column]
                absorbed = (inherited != node
                            or (alphas[column] > 0 and collapse_at[node] <= alphas[column]))
                leaf_of[left[node], column] = inherited if absorbed else left[node]
                leaf_of[right[node], column] = inherited if absorbed else right[node]
        for row in range(n_rows):
            out_of_bag = counts[tree, row] == 0
            if out_of_bag:  # in-bag rows' leaves were recorded as the tree grew
                oob_votes[row] += 1
                node = 0
                while left[node] >= 0:
                    if features[row, feature[node]] <= threshold[node]:
                        node = left[node]
                    else:
                        node = right[node]
            else:
                node = row_leaf[row]
            for column in range(n_alphas):
                leaf = leaf_of[node, column]
                for klass in range(n_classes):
                    in_sums[row, column, klass] += value[leaf, klass]
                    if out_of_bag:
                        oob_sums[row, column, klass] += value[leaf, klass]
    return True
