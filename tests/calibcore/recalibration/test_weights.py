"""Recalibrators fitted with row weights: integer weights fit what the repeated rows fit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.isotonic import IsotonicRegression

from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import REGISTRY, VennAbers
from calibcore.recalibration._base import Recalibrator
from calibcore.recalibration.lece import (
    LECD,
    LECE,
    Composed,
    cross_validated_log_loss,
    weighted_neighbour_means,
)
from calibcore.recalibration.lore import LoRe
from calibcore.recalibration.scaling import PlattScaling, TemperatureScaling
from calibcore.recalibration.similarity import SWC, SWCHH
from calibcore.recalibration.variable_tree import VariableTreeCalibration
from tests.calibcore.recalibration.test_similarity import local_problem, reference_calibrate

#: Methods whose weighted fit is the fit of the repeated rows (to the tolerance below).
REPEATABLE = ["temperature", "platt", "beta", "dirichlet", "isotonic", "histogram",
              "scaling_binning", "prior_shift", "venn_abers"]
#: SWC and SWC-HH: their forests' bootstrap draws rows, so only the votes given a forest are.
WEIGHTED = [*REPEATABLE, "swc", "swc_hh", "lece", "lecd", "composed", "lore",
            "variable_tree"]
#: Closed forms and sorts agree to rounding; L-BFGS-B stops at its tolerances; Venn-Abers'
#: weighted cumulative sums of integers are the repeated rows' counts exactly.
TOLERANCE = {"temperature": 1e-9, "platt": 1e-7, "isotonic": 1e-12, "histogram": 1e-12,
             "scaling_binning": 1e-7, "beta": 1e-5, "dirichlet": 1e-4, "prior_shift": 1e-9,
             "venn_abers": 0.0}


def _data(n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(400, n_classes)) * 2.0
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    truth = np.exp(logits / 2) / np.exp(logits / 2).sum(axis=1, keepdims=True)
    labels = (rng.random(400)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    weights = rng.integers(0, 4, 400).astype(np.float64)
    return np.minimum(labels, n_classes - 1), proba, weights


def test_the_registry_says_which_methods_take_weights() -> None:
    assert sorted(name for name, cls in REGISTRY.items() if cls.supports_weights) == sorted(
        WEIGHTED)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method", REPEATABLE)
def test_integer_weights_fit_the_repeated_rows(method: str, n_classes: int) -> None:
    labels, proba, weights = _data(n_classes, seed=n_classes)
    repeated = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = REGISTRY[method]().fit(proba, labels, sample_weight=weights)
    plain = REGISTRY[method]().fit(proba[repeated], labels[repeated])
    grid = _data(n_classes, seed=99)[1]
    np.testing.assert_allclose(weighted.predict_proba(grid), plain.predict_proba(grid),
                               atol=TOLERANCE[method], rtol=0)


@pytest.mark.parametrize("method", WEIGHTED)
def test_weights_of_one_fit_as_no_weights(method: str) -> None:
    """Bit for bit: the weighted path with every weight 1 does the unweighted arithmetic."""
    labels, proba, _ = _data(3, seed=5)
    features = np.random.default_rng(5).normal(size=(labels.size, 1))  # v of variable_tree
    estimator = REGISTRY[method]()
    if "n_estimators" in estimator.get_params():
        estimator.set_params(n_estimators=10)
    given = features if estimator.needs_features else None
    ones = clone(estimator).fit(proba, labels, given, sample_weight=np.ones(labels.size))
    plain = clone(estimator).fit(proba, labels, given)
    assert ones.to_json() == plain.to_json()
    if method != "swc_hh":  # its prediction fits a forest per neighbourhood: slow
        np.testing.assert_array_equal(ones.predict_proba(proba, given),
                                      plain.predict_proba(proba, given))


def test_temperature_by_hand_on_two_rows() -> None:
    """Binary, one row of margin m right (y = 1) with weight 3 and one of margin m wrong
    with weight 1: the weighted NLL 3 log(1 + e^-bm) + log(1 + e^bm) is least where
    3 / (1 + e^bm) = 1 / (1 + e^-bm), i.e. e^bm = 3, so T = m / log 3."""
    p = np.array([0.8, 0.8])
    margin = np.log(0.8 / 0.2)
    fitted = REGISTRY["temperature"]().fit(p, np.array([1, 0]), sample_weight=[3.0, 1.0])
    assert fitted.temperature_ == pytest.approx(margin / np.log(3.0), rel=1e-9)


class _Unweighted(Recalibrator):
    """A recalibrator outside the registry that does not take weights (the identity)."""

    method = "test_unweighted"
    display_name = "Unweighted identity"

    def _fit(self, proba, labels, features, heartbeat):
        pass

    def _predict(self, proba, features, heartbeat):
        return proba


def test_a_recalibrator_without_weights_refuses_them_by_name():
    labels, proba, weights = _data(2)
    with pytest.raises(CalibrationInputError, match="Unweighted identity does not take sample "
                       "weights") as caught:
        _Unweighted().fit(proba, labels, sample_weight=weights)
    assert caught.value.code == "weights_not_supported"
    assert "temperature" in str(caught.value)
    _Unweighted().fit(proba, labels)  # and fits without them


def test_a_composition_takes_weights_when_every_step_does():
    assert Composed.supports_weights  # the default, TS+LECE
    assert Composed(steps=[PlattScaling(), VennAbers()]).supports_weights
    mixed = Composed(steps=[PlattScaling(), _Unweighted()])
    assert not mixed.supports_weights
    labels, proba, weights = _data(2)
    with pytest.raises(CalibrationInputError, match=r"its step\(s\) Unweighted identity do not"):
        mixed.fit(proba, labels, sample_weight=weights)


def test_bad_weights_are_refused() -> None:
    labels, proba, weights = _data(2)
    weights[[2, 5]] = -1
    with pytest.raises(CalibrationInputError, match="negative") as caught:
        REGISTRY["platt"]().fit(proba, labels, sample_weight=weights)
    assert caught.value.rows == [2, 5]


# ------------------------------------------------------------------ Venn-Abers


def _weighted_brute_force(scores, labels, weights, test):
    """(p0, p1) by scikit-learn's weighted isotonic regression of the calibration rows plus
    the test row (weight 1) labelled 0, then 1, read at the test score."""
    ends = []
    for label in (0.0, 1.0):
        model = IsotonicRegression().fit(np.append(scores, test), np.append(labels, label),
                                         sample_weight=np.append(weights, 1.0))
        ends.append(float(model.predict([test])[0]))
    return ends


def test_venn_abers_with_weights_is_the_weighted_isotonic_fit():
    rng = np.random.default_rng(11)
    scores = np.round(rng.uniform(size=60), 1)  # ties pool as one block
    labels = (rng.random(60) < scores ** 0.5).astype(float)
    weights = rng.uniform(0.0, 3.0, 60)
    weights[:5] = 0.0
    model = VennAbers().fit(scores, labels.astype(int), sample_weight=weights)
    tests = np.array([0.0, 0.05, 0.3, 0.35, 0.72, 1.0])
    lower, upper = model.predict_interval(tests)
    present = weights > 0
    for row, test in enumerate(tests):
        p0, p1 = _weighted_brute_force(scores[present], labels[present], weights[present], test)
        assert lower[row, 1] == pytest.approx(p0, abs=1e-12)
        assert upper[row, 1] == pytest.approx(p1, abs=1e-12)


def test_venn_abers_weights_change_the_fit():
    """Weighting the label-1 rows up raises every p1 (a check that could fail)."""
    rng = np.random.default_rng(3)
    scores = rng.uniform(size=80)
    labels = (rng.random(80) < scores).astype(int)
    plain = VennAbers().fit(scores, labels)
    heavy = VennAbers().fit(scores, labels, sample_weight=np.where(labels == 1, 3.0, 1.0))
    grid = np.linspace(0.05, 0.95, 19)
    assert np.all(heavy.predict_interval(grid)[1][:, 1] >= plain.predict_interval(grid)[1][:, 1])
    assert np.any(heavy.predict_proba(grid)[:, 1] > plain.predict_proba(grid)[:, 1] + 0.01)


@pytest.mark.parametrize("multiclass", ["one_vs_rest", "one_vs_one"])
def test_venn_abers_integer_weights_are_the_repeated_rows_bit_for_bit(multiclass):
    labels, proba, weights = _data(4, seed=8)
    repeated = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = VennAbers(multiclass=multiclass).fit(proba, labels, sample_weight=weights)
    plain = VennAbers(multiclass=multiclass).fit(proba[repeated], labels[repeated])
    grid = _data(4, seed=98)[1]
    np.testing.assert_array_equal(weighted.predict_proba(grid), plain.predict_proba(grid))
    for ours, theirs in zip(weighted.predict_interval(grid), plain.predict_interval(grid),
                            strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_cross_venn_abers_takes_weights_fold_by_fold():
    """Cross Venn-Abers splits the rows (with their weights) into folds: zero weights are
    those rows left out of their fold's fits."""
    labels, proba, weights = _data(2, seed=4)
    model = VennAbers(cross_folds=3).fit(proba, labels, sample_weight=weights)
    folds = VennAbers(cross_folds=3)._fold_rows(labels)
    for fold, rows in enumerate(folds):
        kept = rows[weights[rows] > 0]
        alone = VennAbers().fit(proba[kept], labels[kept], sample_weight=weights[kept])
        np.testing.assert_array_equal(model.grids_[fold], alone.grids_[0])
        np.testing.assert_array_equal(model.upper_[fold], alone.upper_[0])


# ------------------------------------------------------------------ SWC and SWC-HH


def _weighted_problem(seed: int, n_classes: int = 3):
    X_cal, y_cal, p_cal, X, _, p = local_problem(seed, n_cal=120, n_test=25,
                                                 n_classes=n_classes)
    weights = np.random.default_rng(seed).integers(0, 4, y_cal.size).astype(np.float64)
    return X_cal, y_cal, p_cal, X, p, weights


def _reference_weighted_similarity(X_cal, y_cal, p_cal, X, p, weights, n_estimators, seed):
    """The proximity of scikit-learn's forest fitted with sample_weight on [X, p
    standardized with weighted moments], by the pairwise loop, on the rows of weight > 0."""
    kept = weights > 0
    X_cal, y_cal, p_cal, weights = X_cal[kept], y_cal[kept], p_cal[kept], weights[kept]
    mean = np.average(p_cal, axis=0, weights=weights)
    scale = np.sqrt(np.average((p_cal - mean) ** 2, axis=0, weights=weights))
    cal, query = np.hstack((X_cal, (p_cal - mean) / scale)), np.hstack((X, (p - mean) / scale))
    forest = RandomForestClassifier(n_estimators=n_estimators, random_state=seed).fit(
        cal, y_cal, sample_weight=weights)
    cal_leaves, query_leaves = forest.apply(cal), forest.apply(query)
    similarity = (query_leaves[:, None, :] == cal_leaves[None, :, :]).mean(axis=2)
    return similarity, y_cal, weights


@pytest.mark.parametrize("prior", [0.0, 0.01])
def test_swc_with_weights_equals_the_weighted_reference(prior):
    """Eq. 5 with row weights on the forest scikit-learn grows with those weights."""
    X_cal, y_cal, p_cal, X, p, weights = _weighted_problem(0)
    model = SWC(n_estimators=25, random_state=3, prior_strength=prior)
    model.fit(p_cal, y_cal, X_cal, sample_weight=weights)
    similarity, labels, kept_weights = _reference_weighted_similarity(
        X_cal, y_cal, p_cal, X, p, weights, 25, 3)
    expected = reference_calibrate(similarity * kept_weights, labels, p, prior=prior)
    np.testing.assert_allclose(model.predict_proba(p, X), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.calibration_support(p, X),
                               (similarity * kept_weights).sum(axis=1), rtol=1e-12)


def test_swc_hh_with_weights_weighs_the_votes_not_the_filter():
    X_cal, y_cal, p_cal, X, p, weights = _weighted_problem(1)
    model = SWCHH(n_estimators=25, random_state=0, prior_strength=0.0)
    model.fit(p_cal, y_cal, X_cal, sample_weight=weights)
    similarity, labels, kept_weights = _reference_weighted_similarity(
        X_cal, y_cal, p_cal, X, p, weights, 25, 0)
    hh = np.resize([0.0, 0.3, 0.8, 2.0], p.shape[0])
    # the filter is on s(t, i) alone; the kept rows then vote s(t, i) w_i
    kept = similarity >= hh[:, None] / 2.0
    nobody = ~kept.any(axis=1)
    kept[nobody, similarity[nobody].argmax(axis=1)] = True
    expected = reference_calibrate(np.where(kept, similarity * kept_weights, 0.0), labels, p)
    np.testing.assert_allclose(model.predict_with_heterogeneity(p, X, hh), expected,
                               rtol=0, atol=1e-12)
    assert model.calibration_features_.shape[0] == int((weights > 0).sum())


@pytest.mark.parametrize("estimator", [SWC, SWCHH])
def test_swc_integer_weights_vote_as_the_repeated_rows_given_the_forest(estimator):
    """The same forest, its calibration leaves repeated by the weights and no weights: the
    votes (sums of integers) are bit for bit those of the weighted model."""
    X_cal, y_cal, p_cal, X, p, weights = _weighted_problem(2)
    weighted = estimator(n_estimators=20, random_state=1).fit(p_cal, y_cal, X_cal,
                                                             sample_weight=weights)
    document = weighted.to_json()
    copies = np.repeat(np.arange(weighted.calibration_labels_.size),
                       weighted.calibration_weights_.astype(int))
    repeated = type(weighted).from_json(document)
    repeated.calibration_leaves_ = weighted.calibration_leaves_[copies]
    repeated.calibration_labels_ = weighted.calibration_labels_[copies]
    repeated.calibration_weights_ = None
    hh = np.full(p.shape[0], 0.2)
    if estimator is SWC:
        np.testing.assert_array_equal(weighted.predict_proba(p, X), repeated.predict_proba(p, X))
        np.testing.assert_array_equal(weighted.calibration_support(p, X),
                                      repeated.calibration_support(p, X))
    else:  # a matrix product of weighted similarities: equal to rounding
        np.testing.assert_allclose(weighted.predict_with_heterogeneity(p, X, hh),
                                   repeated.predict_with_heterogeneity(p, X, hh),
                                   rtol=0, atol=1e-15)


@pytest.mark.parametrize("estimator", [SWC, SWCHH])
def test_swc_zero_weights_are_the_rows_left_out(estimator):
    X_cal, y_cal, p_cal, X, p, weights = _weighted_problem(4)
    weights = np.where(weights > 0, 1.0, 0.0)
    kept = weights > 0
    weighted = estimator(n_estimators=15, random_state=2).fit(p_cal, y_cal, X_cal,
                                                             sample_weight=weights)
    dropped = estimator(n_estimators=15, random_state=2).fit(p_cal[kept], y_cal[kept],
                                                            X_cal[kept])
    hh = np.full(p.shape[0], 0.3)
    np.testing.assert_array_equal(weighted.predict_with_heterogeneity(p, X, hh)
                                  if estimator is SWCHH else weighted.predict_proba(p, X),
                                  dropped.predict_with_heterogeneity(p, X, hh)
                                  if estimator is SWCHH else dropped.predict_proba(p, X))


def test_swc_weights_survive_the_json_round_trip_and_old_documents_load():
    X_cal, y_cal, p_cal, X, p, weights = _weighted_problem(5)
    model = SWC(n_estimators=10).fit(p_cal, y_cal, X_cal, sample_weight=weights + 0.5)
    again = SWC.from_json(model.to_json())
    np.testing.assert_array_equal(again.predict_proba(p, X), model.predict_proba(p, X))
    plain = SWC(n_estimators=10).fit(p_cal, y_cal, X_cal)
    document = plain.to_json()
    del document["state"]["calibration_weights_"]  # written before weights were taken
    np.testing.assert_array_equal(SWC.from_json(document).predict_proba(p, X),
                                  plain.predict_proba(p, X))


# ------------------------------------------------------------------ LECE, LECD, composition


def _reference_weighted_means(query, reference, targets, weights, mass):
    """Row by row: KL by its definition, rows taken nearest first (stable on ties) until
    their weights make ``mass``, the last with the part that fits."""
    out = np.empty((query.shape[0], targets.shape[1]))
    q, r = np.clip(query, 1e-30, 1.0), np.clip(reference, 1e-30, 1.0)
    for i in range(query.shape[0]):
        distance = np.sum(q[i] * np.log(q[i] / r), axis=1)
        left, total = mass, np.zeros(targets.shape[1])
        for j in np.argsort(distance, kind="stable"):
            share = min(weights[j], left)
            total += share * targets[j]
            left -= share
            if left <= 0:
                break
        out[i] = total / mass
    return out


@pytest.mark.parametrize("mass", [0.7, 5.0, 31.5])
def test_weighted_neighbour_means_by_hand(mass):
    rng = np.random.default_rng(21)
    reference, query = rng.dirichlet([2, 2, 2], 60), rng.dirichlet([2, 2, 2], 15)
    targets, weights = rng.normal(size=(60, 2)), rng.uniform(0.2, 2.5, 60)
    ours = weighted_neighbour_means(query, reference, targets, weights, [mass])[0]
    np.testing.assert_allclose(ours, _reference_weighted_means(query, reference, targets,
                                                               weights, mass), atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("estimator", [LECE, LECD])
def test_lece_integer_weights_are_the_repeated_rows(estimator, n_classes):
    """Given q and t: the k = int(q W) nearest units of weight are the repeated rows' k
    nearest rows (continuous data: no ties between distinct rows)."""
    labels, proba, weights = _data(n_classes, seed=31)
    repeated = np.repeat(np.arange(labels.size), weights.astype(int))
    grid = _data(n_classes, seed=97)[1]
    for size, threshold in [(0.03, 0.0), (0.2, 0.01), (1.0, 0.0)]:
        weighted = estimator(neighborhood_size=size, threshold=threshold).fit(
            proba, labels, sample_weight=weights)
        plain = estimator(neighborhood_size=size, threshold=threshold).fit(
            proba[repeated], labels[repeated])
        np.testing.assert_allclose(weighted.predict_proba(grid), plain.predict_proba(grid),
                                   rtol=0, atol=1e-12)


def test_lece_weighted_cross_validation_with_unit_weights_is_the_unweighted_one():
    """The weighted search path (weighted neighbourhoods and held-out means) with every
    weight 1 gives the unweighted path's losses."""
    labels, proba, _ = _data(3, seed=12)
    common = {"assumption": "errors", "neighborhood_sizes": (0.02, 0.1, 1.0),
              "thresholds": (0.0, 0.01, 1.0), "n_folds": 4, "random_state": 0}
    weighted = cross_validated_log_loss(proba, labels, sample_weight=np.ones(labels.size),
                                        **common)
    np.testing.assert_allclose(weighted, cross_validated_log_loss(proba, labels, **common),
                               rtol=1e-12)


def test_lece_weighted_fit_searches_and_round_trips():
    labels, proba, weights = _data(3, seed=13)
    model = LECE(n_folds=4).fit(proba, labels, sample_weight=weights + 0.5)
    assert model.cv_log_loss_.shape == (10, 10) and np.isfinite(model.cv_log_loss_).all()
    again = LECE.from_json(model.to_json())
    np.testing.assert_array_equal(again.predict_proba(proba), model.predict_proba(proba))
    plain = LECE(neighborhood_size=0.1, threshold=0.0).fit(proba, labels)
    document = plain.to_json()
    del document["state"]["calibration_weights_"]  # written before weights were taken
    np.testing.assert_array_equal(LECE.from_json(document).predict_proba(proba),
                                  plain.predict_proba(proba))


def test_composed_weights_reach_every_step():
    labels, proba, weights = _data(3, seed=14)
    steps = [TemperatureScaling(), LECE(neighborhood_size=0.1, threshold=0.0)]
    model = Composed(steps=steps).fit(proba, labels, sample_weight=weights)
    temperature = TemperatureScaling().fit(proba, labels, sample_weight=weights)
    assert model.steps_[0].temperature_ == temperature.temperature_
    second = LECE(neighborhood_size=0.1, threshold=0.0).fit(
        temperature.predict_proba(proba), labels, sample_weight=weights)
    grid = _data(3, seed=96)[1]
    np.testing.assert_allclose(model.predict_proba(grid),
                               second.predict_proba(temperature.predict_proba(grid)),
                               rtol=0, atol=1e-15)


# ------------------------------------------------------------------ LoRe and the variable tree


def _featured(n_classes: int, seed: int):
    labels, proba, weights = _data(n_classes, seed=seed)
    rng = np.random.default_rng(seed + 100)
    features = rng.normal(size=(labels.size, 2))
    labels = np.where(features[:, 0] > 0.5, proba.argmax(axis=1), labels)
    return labels, proba, weights, features


@pytest.mark.parametrize("prior", [0.0, 1.0])
def test_lore_integer_weights_are_the_repeated_rows_on_given_columns(prior):
    labels, proba, weights, features = _featured(3, seed=41)
    repeated = np.repeat(np.arange(labels.size), weights.astype(int))
    model = LoRe(reducer="columns", prior_strength=prior)
    weighted = clone(model).fit(proba, labels, features, sample_weight=weights)
    plain = clone(model).fit(proba[repeated], labels[repeated], features[repeated])
    _, grid, _, grid_features = _featured(3, seed=42)
    np.testing.assert_allclose(weighted.predict_proba(grid, grid_features),
                               plain.predict_proba(grid, grid_features), rtol=0, atol=1e-12)
    # far from every calibration row (the underflow fallback), too
    far = grid_features * 400.0
    np.testing.assert_allclose(weighted.predict_proba(grid, far), plain.predict_proba(grid, far),
                               rtol=0, atol=1e-12)


def test_lore_zero_weights_are_the_rows_left_out_and_weights_matter():
    labels, proba, weights, features = _featured(2, seed=43)
    kept = weights > 0
    ones = np.where(kept, 1.0, 0.0)
    weighted = LoRe(n_components=2).fit(proba, labels, features, sample_weight=ones)
    dropped = LoRe(n_components=2).fit(proba[kept], labels[kept], features[kept])
    np.testing.assert_array_equal(weighted.predict_proba(proba, features),
                                  dropped.predict_proba(proba, features))
    heavy = LoRe(n_components=2).fit(proba, labels, features, sample_weight=weights)
    assert np.abs(heavy.predict_proba(proba, features)
                  - dropped.predict_proba(proba, features)).max() > 1e-3


@pytest.mark.parametrize("criterion", ["label", "residual"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_variable_tree_integer_weights_are_the_repeated_rows(criterion, n_classes):
    labels, proba, weights, features = _featured(n_classes, seed=51)
    variable = features[:, 0]
    repeated = np.repeat(np.arange(labels.size), weights.astype(int))
    model = VariableTreeCalibration(split_criterion=criterion, min_region_size=20)
    weighted = clone(model).fit(proba, labels, variable, sample_weight=weights)
    plain = clone(model).fit(proba[repeated], labels[repeated], variable[repeated])
    np.testing.assert_array_equal(weighted.thresholds_, plain.thresholds_)
    assert weighted.thresholds_.size >= 2
    np.testing.assert_array_equal(weighted.region_sizes_, plain.region_sizes_)
    assert [m is None for m in weighted.region_models_] == [
        m is None for m in plain.region_models_]
    _, grid, _, grid_features = _featured(n_classes, seed=52)
    np.testing.assert_allclose(weighted.predict_proba(grid, grid_features[:, 0]),
                               plain.predict_proba(grid, grid_features[:, 0]),
                               rtol=0, atol=1e-4)  # beta/temperature fits' own tolerance
