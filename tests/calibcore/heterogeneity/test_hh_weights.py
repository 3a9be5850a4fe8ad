"""Row weights in hidden heterogeneity (Wagstaff & Dietterich 2023, Algorithm 1, eq. 3-4)
and in calibration support (eq. 6), against scikit-learn's weighted forests and sums by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import accuracy_score
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler

from calibcore._progress import silent
from calibcore.exceptions import CalibrationInputError
from calibcore.heterogeneity import hidden_heterogeneity, hidden_heterogeneity_details
from calibcore.heterogeneity._bagging import TreeSeeds
from calibcore.heterogeneity._forest_scores import score_forests
from calibcore.heterogeneity.hidden import recommend_calibration
from calibcore.insights import calibration_support

FIELDS = ("values", "n_neighbours", "neighbourhood", "ccp_alpha", "oob_accuracy",
          "brier_original", "brier_local")


def small_problem(seed: int, n_cal: int = 40, n_test: int = 6, n_classes: int = 3):
    """A classifier that ignores feature 0, which decides the label half the time."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_cal + n_test, 3))
    logits = rng.normal(size=(n_cal + n_test, n_classes))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.where(rng.random(n_cal + n_test) < 0.5,
                      (features[:, 0] > 0).astype(int) * (n_classes - 1),
                      rng.integers(0, n_classes, n_cal + n_test))
    return features[:n_cal], labels[:n_cal], proba[:n_cal], proba[n_cal:]


def weighted_brier(proba: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> float:
    """Eq. 4 with row weights, written out: sum_i w_i sum_k (p_ik - 1[y_i = k])^2 / sum w."""
    onehot = np.eye(proba.shape[1])[labels]
    per_row = ((proba - onehot) ** 2).sum(axis=1)
    return float(np.sum(weights * per_row) / np.sum(weights))


def weighted_reference_hh(X_cal, y_cal, p_cal, p_test, weights, radius, seed):
    """The reference's per-row loop with scikit-learn 1.9's weighted forests: fit with
    sample_weight, OOB accuracy and both Brier scores weighted over the neighbourhood."""
    n_classes = p_cal.shape[1]
    finder = NearestNeighbors(radius=radius * np.sqrt(2)).fit(np.sqrt(p_cal))
    out = []
    for row in range(p_test.shape[0]):
        nbrs = finder.radius_neighbors(np.sqrt(p_test[row])[None], return_distance=False)[0]
        if nbrs.size == 0 or np.unique(y_cal[nbrs]).size == 1:
            out.append(0.0)
            continue
        w = weights[nbrs]
        before, after, best = weighted_brier(p_cal[nbrs], y_cal[nbrs], w), np.inf, 0.0
        for alpha in np.linspace(0, 0.03, 7):
            forest = RandomForestClassifier(n_estimators=100, max_features=None,
                                            oob_score=True, ccp_alpha=alpha, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                forest.fit(X_cal[nbrs], y_cal[nbrs], sample_weight=w)
            predicted = forest.classes_[np.argmax(forest.oob_decision_function_, axis=1)]
            oob = accuracy_score(y_cal[nbrs], predicted, sample_weight=w)
            if oob > best:
                best = oob
                local = np.zeros((nbrs.size, n_classes))
                local[:, forest.classes_] = forest.predict_proba(X_cal[nbrs])
                after = weighted_brier(local, y_cal[nbrs], w)
        out.append(max(before - after, 0.0))
    return np.array(out)


def test_weights_all_one_are_no_weights_bit_for_bit():
    X_cal, y_cal, p_cal, p_test = small_problem(5, n_cal=60, n_test=5, n_classes=2)
    plain = hidden_heterogeneity_details(X_cal, y_cal, p_cal, p_test, radius=0.3, n_jobs=1)
    ones = hidden_heterogeneity_details(X_cal, y_cal, p_cal, p_test, radius=0.3, n_jobs=1,
                                        sample_weight=np.ones(60))
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(ones, field), getattr(plain, field), field)
    assert plain.values.max() > 0 and not ones.weighted and not plain.weighted


def test_weights_of_zero_are_the_rows_left_out_bit_for_bit():
    X_cal, y_cal, p_cal, p_test = small_problem(6, n_cal=70, n_test=5, n_classes=2)
    weights = np.random.default_rng(1).uniform(0.5, 3.0, 70)
    weights[::4] = 0.0
    kept = weights > 0
    dropped = hidden_heterogeneity_details(X_cal[kept], y_cal[kept], p_cal[kept], p_test,
                                           radius=0.3, n_jobs=1, sample_weight=weights[kept])
    zeros = hidden_heterogeneity_details(X_cal, y_cal, p_cal, p_test, radius=0.3, n_jobs=1,
                                         sample_weight=weights)
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(zeros, field), getattr(dropped, field), field)
    assert zeros.weighted and zeros.n_calibration == int(kept.sum())
    # weights 0 and 1 only: the rows of weight 1, unweighted
    binary = kept.astype(float)
    np.testing.assert_array_equal(
        hidden_heterogeneity(X_cal, y_cal, p_cal, p_test, radius=0.3, n_jobs=1,
                             sample_weight=binary),
        hidden_heterogeneity(X_cal[kept], y_cal[kept], p_cal[kept], p_test, radius=0.3,
                             n_jobs=1))


def test_weighted_forests_are_scikit_learns_weighted_forests():
    """In-sample probabilities and weighted OOB accuracy of the pruned forests equal
    RandomForestClassifier(max_features=None, ccp_alpha=a).fit(..., sample_weight=w)."""
    rng = np.random.default_rng(2)
    features = rng.normal(size=(50, 3))
    labels = (features[:, 0] + 0.8 * rng.normal(size=50) > 0).astype(np.intp)
    weights = rng.uniform(0.1, 4.0, 50)
    alphas = np.array([0.0, 0.02])
    seeds = TreeSeeds.draw(4, 100, n_raw=2 * 50 + 256)
    scores = score_forests(features, labels, 2, seeds, alphas, silent(), weights)
    for column, alpha in enumerate(alphas):
        forest = RandomForestClassifier(n_estimators=100, max_features=None, oob_score=True,
                                        ccp_alpha=alpha, random_state=4)
        forest.fit(features, labels, sample_weight=weights)
        np.testing.assert_array_equal(scores.in_sample[column], forest.predict_proba(features))
        predicted = np.argmax(forest.oob_decision_function_, axis=1)
        expected = accuracy_score(labels, predicted, sample_weight=weights)
        assert scores.oob_correct[column] / weights.sum() == pytest.approx(expected, rel=1e-12)
    # and they differ from the unweighted forests: the weights were used
    plain = score_forests(features, labels, 2, seeds, alphas, silent())
    assert not np.array_equal(plain.in_sample, scores.in_sample)


@pytest.mark.parametrize(("seed", "n_classes", "radius", "n_test", "n_cal"), [
    pytest.param(0, 2, 0.25, 2, 40, marks=pytest.mark.slow),  # 3 s: 14 reference forests
    pytest.param(3, 3, 0.35, 5, 50, marks=pytest.mark.slow),
])
def test_weighted_hh_equals_the_weighted_reference_loop(seed, n_classes, radius, n_test,
                                                         n_cal):
    X_cal, y_cal, p_cal, p_test = small_problem(seed, n_cal=n_cal, n_test=n_test,
                                                n_classes=n_classes)
    weights = np.random.default_rng(seed).integers(1, 5, n_cal).astype(float)
    expected = weighted_reference_hh(X_cal, y_cal, p_cal, p_test, weights, radius, seed=3)
    result = hidden_heterogeneity_details(X_cal, y_cal, p_cal, p_test, radius=radius,
                                          random_state=3, n_jobs=1, sample_weight=weights)
    np.testing.assert_allclose(result.values, expected, rtol=1e-12, atol=1e-15)
    assert expected.max() > 0 and result.weighted
    unweighted = hidden_heterogeneity(X_cal, y_cal, p_cal, p_test, radius=radius,
                                      random_state=3, n_jobs=1)
    assert not np.array_equal(unweighted, result.values)


def test_weighted_brier_before_is_the_weighted_mean_over_the_neighbourhood():
    X_cal, y_cal, p_cal, p_test = small_problem(8, n_cal=30, n_test=3, n_classes=2)
    weights = np.random.default_rng(0).uniform(0.2, 2.0, 30)
    result = hidden_heterogeneity_details(X_cal, y_cal, p_cal, p_test, radius=1.0, n_jobs=1,
                                          sample_weight=weights)
    # radius 1: every calibration row is every test row's neighbour
    assert (result.n_neighbours == 30).all()
    assert result.brier_original[0] == pytest.approx(weighted_brier(p_cal, y_cal, weights),
                                                     rel=1e-13)


def test_weighted_recommendation_uses_the_weighted_mean():
    advice = recommend_calibration([0.0, 0.1], 1000, sample_weight=[3.0, 1.0])
    assert advice.mean_hh == pytest.approx(0.025) and advice.recommend == "global"
    assert recommend_calibration([0.0, 0.1], 1000).recommend == "local"


def test_bad_weights_are_refused():
    X_cal, y_cal, p_cal, p_test = small_problem(1, n_cal=20, n_test=2)
    for bad in (np.zeros(20), -np.ones(20), np.ones(19)):
        with pytest.raises(CalibrationInputError):
            hidden_heterogeneity(X_cal, y_cal, p_cal, p_test, sample_weight=bad)


def test_weighted_support_is_the_sum_of_similarity_times_weight_by_hand():
    """S_t = sum_i s(t, i) w_i on a 5-tree forest: scikit-learn's weighted forest on
    [X, standardized p] (weighted mean and standard deviation), its leaves, summed by hand."""
    rng = np.random.default_rng(3)
    X_cal, X = rng.normal(size=(40, 2)), rng.normal(size=(6, 2))
    p_cal, p = rng.uniform(0.05, 0.95, 40), rng.uniform(0.05, 0.95, 6)
    y_cal = (rng.random(40) < p_cal).astype(int)
    weights = rng.uniform(0.5, 3.0, 40)
    support = calibration_support(X_cal, y_cal, p_cal, X, p, n_estimators=5, n_folds=2,
                                  sample_weight=weights)
    P_cal, P = np.column_stack([1 - p_cal, p_cal]), np.column_stack([1 - p, p])
    scaler = StandardScaler().fit(P_cal, sample_weight=weights)
    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(
        np.hstack([X_cal, scaler.transform(P_cal)]), y_cal, sample_weight=weights)
    leaves_cal = forest.apply(np.hstack([X_cal, scaler.transform(P_cal)]))
    leaves = forest.apply(np.hstack([X, scaler.transform(P)]))
    expected = [sum(weights[i] * np.mean(leaves[t] == leaves_cal[i]) for i in range(40))
                for t in range(6)]
    np.testing.assert_allclose(support.values, expected, rtol=1e-12)
    ones = calibration_support(X_cal, y_cal, p_cal, X, p, n_estimators=5, n_folds=2,
                               sample_weight=np.ones(40))
    plain = calibration_support(X_cal, y_cal, p_cal, X, p, n_estimators=5, n_folds=2)
    for field in ("values", "held_out", "reference"):
        np.testing.assert_array_equal(getattr(ones, field), getattr(plain, field))
    assert not np.allclose(plain.values, support.values)


@pytest.mark.parametrize(("n_rows", "seed"), [(1, 0), (7, 1), (64, 2), (700, 3)])
def test_weighted_bootstrap_counts_are_legacy_choice_draws(n_rows, seed):
    """The draws read from the raw streams equal RandomState(seed).choice(n, n, p=w/sum w)."""
    from calibcore.heterogeneity._forest_scores import weighted_bootstrap_counts

    weights = np.random.default_rng(seed).uniform(0.0, 3.0, n_rows)
    weights[::5] = 0.0
    weights[-1] = 1.0
    seeds = TreeSeeds.draw(seed, 20, n_raw=2 * n_rows + 256)
    counts = weighted_bootstrap_counts(seeds, weights)
    for tree, tree_seed in enumerate(seeds.seeds):
        draws = np.random.RandomState(int(tree_seed)).choice(
            n_rows, n_rows, replace=True, p=weights / np.sum(weights))
        np.testing.assert_array_equal(counts[tree], np.bincount(draws, minlength=n_rows))
    assert (counts[:, weights == 0] == 0).all()
