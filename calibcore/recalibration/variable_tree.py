"""Variable-based recalibration with a decision tree over one variable (Kelly & Smyth 2023).

Kelly & Smyth (2023), "Variable-Based Calibration for Machine Learning
Classifiers", Section 6: a shallow decision tree trained on the variable of
interest v alone (minimum leaf size one tenth of the calibration rows) splits
v into regions, and each region gets its own recalibration map — beta
calibration for binary problems — so that miscalibration that varies along v
(high VECE) is corrected where a single global map cannot.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from calibcore._progress import Heartbeat
from calibcore._validation import check_in_range, check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration._base import Recalibrator, register
from calibcore.recalibration.beta import BetaCalibration, DirichletCalibration
from calibcore.recalibration.scaling import TemperatureScaling

__all__ = ["MulticlassMap", "SplitCriterion", "VariableTreeCalibration", "assign_regions"]

SplitCriterion = Literal["label", "residual"]
MulticlassMap = Literal["temperature", "dirichlet"]

_MULTICLASS_MAPS: dict[str, type[Recalibrator]] = {
    "temperature": TemperatureScaling,
    "dirichlet": DirichletCalibration,
}


def _leaf_limits(min_leaf: int, weights: NDArray[np.float64] | None) -> dict[str, float]:
    """The tree's least leaf: ``min_leaf`` rows, or with weights that much weight (what the
    rows repeated by their weights would need)."""
    if weights is None:
        return {"min_samples_leaf": min_leaf}
    # a hair below min_leaf, so a leaf of exactly min_leaf weight passes despite rounding
    return {"min_samples_leaf": 1,
            "min_weight_fraction_leaf": min_leaf * (1.0 - 1e-12) / float(weights.sum())}


def _label_tree(
    variable: NDArray[np.float64],
    proba: NDArray[np.float64],
    labels: NDArray[np.intp],
    max_depth: int,
    min_leaf: int,
    random_state: int | None,
    weights: NDArray[np.float64] | None = None,
) -> DecisionTreeClassifier | DecisionTreeRegressor:
    """The paper's tree: classify the label y from v alone."""
    tree = DecisionTreeClassifier(max_depth=max_depth, random_state=random_state,
                                  **_leaf_limits(min_leaf, weights))
    return tree.fit(variable[:, None], labels, sample_weight=weights)


def _residual_tree(
    variable: NDArray[np.float64],
    proba: NDArray[np.float64],
    labels: NDArray[np.intp],
    max_depth: int,
    min_leaf: int,
    random_state: int | None,
    weights: NDArray[np.float64] | None = None,
) -> DecisionTreeClassifier | DecisionTreeRegressor:
    """Regress the top-label gap 1[argmax = y] - max p on v: the quantity VECE averages."""
    predicted = proba.argmax(axis=1)
    gap = (predicted == labels) - proba[np.arange(labels.size), predicted]
    tree = DecisionTreeRegressor(max_depth=max_depth, random_state=random_state,
                                 **_leaf_limits(min_leaf, weights))
    return tree.fit(variable[:, None], gap, sample_weight=weights)


_SPLITTERS = {"label": _label_tree, "residual": _residual_tree}


def tree_thresholds(tree: DecisionTreeClassifier | DecisionTreeRegressor) -> NDArray[np.float64]:
    """Sorted split thresholds of a fitted one-feature tree.

    With a single input every leaf is an interval of v bounded by the
    thresholds of its ancestors, and no other threshold falls inside it, so the
    leaves are exactly the intervals between consecutive sorted thresholds.
    """
    internal = tree.tree_.children_left != -1
    return np.sort(np.asarray(tree.tree_.threshold[internal], dtype=np.float64))


def assign_regions(
    variable: NDArray[np.float64], thresholds: NDArray[np.float64]
) -> NDArray[np.intp]:
    """Region of each value: region r is (t_{r-1}, t_r] (v <= t goes left, as in the tree)."""
    return np.searchsorted(thresholds, variable, side="left")


@register
class VariableTreeCalibration(Recalibrator):
    """Recalibration per region of one variable v, regions from a decision tree.

    Following Kelly and Smyth (2022, Section 6): a decision tree on v alone
    (depth at most ``max_depth``, leaves of at least ``min_leaf_fraction`` of
    the calibration rows) cuts v into intervals; each interval gets its own
    map, fitted on its calibration rows: beta calibration for binary problems
    and, for multiclass, temperature scaling (default; one parameter per region
    is stable with the few hundred rows a region typically has) or Dirichlet
    calibration (the paper's choice; K(K+1) parameters per region). A global
    map of the same family is fitted on every calibration row and used for
    degenerate regions -- fewer than ``min_region_size`` rows, a single
    observed class, no top-label errors (or no correct predictions), or, when
    binary, classes perfectly separated by P(class 1): there the region's own
    fit would diverge to 0/1 probabilities -- and for rows whose v is missing
    (NaN or infinite).

    Parameters
    ----------
    max_depth : int, default=3
        Maximum tree depth (at most 2**max_depth regions); 3 as in the paper's
        experiments.
    min_leaf_fraction : float, default=0.1
        Minimum leaf size as a fraction of the calibration rows (paper: 1/10).
    min_region_size : int, default=30
        Regions with fewer calibration rows use the global map.
    split_criterion : {"label", "residual"}, default="label"
        What the tree is grown to predict from v: the class label (the paper)
        or the top-label calibration gap 1[argmax = y] - max p, which puts the
        cuts where miscalibration changes rather than where the class mix does.
    multiclass_map : {"temperature", "dirichlet"}, default="temperature"
        Per-region map for more than two classes.
    random_state : int or None, default=0
        Seed of the tree (it only breaks ties between equally good splits).

    Notes
    -----
    ``features`` is the variable v itself: shape (n,) or (n, 1). Pass the one
    column the regions should follow.

    With ``sample_weight`` the tree is grown with the weights (its least leaf and
    ``min_region_size`` count weight instead of rows) and every map is fitted with them;
    rows of weight 0 are left out. Integer weights then give the regions of the rows
    repeated by their weights, and maps equal to theirs to the maps' own tolerance.

    Attributes
    ----------
    thresholds_ : ndarray of shape (r - 1,)
        Sorted split points; region i is (thresholds_[i-1], thresholds_[i]].
    region_models_ : list of Recalibrator or None
        The fitted map of each region, None where the global map is used.
    region_sizes_ : ndarray of shape (r,)
        Calibration rows in each region (their weight, when fitted with weights).
    global_model_ : Recalibrator
        The map fitted on every calibration row.
    """

    method = "variable_tree"
    display_name = "Variable-based tree calibration"
    needs_features = True
    supports_weights = True
    fitted_attributes = ("thresholds_", "region_models_", "region_sizes_", "global_model_")

    def __init__(
        self,
        *,
        max_depth: int = 3,
        min_leaf_fraction: float = 0.1,
        min_region_size: int = 30,
        split_criterion: SplitCriterion = "label",
        multiclass_map: MulticlassMap = "temperature",
        random_state: int | None = 0,
    ) -> None:
        self.max_depth = max_depth
        self.min_leaf_fraction = min_leaf_fraction
        self.min_region_size = min_region_size
        self.split_criterion = split_criterion
        self.multiclass_map = multiclass_map
        self.random_state = random_state

    def _template(self, n_classes: int) -> Recalibrator:
        if n_classes == 2:
            return BetaCalibration()
        if self.multiclass_map not in _MULTICLASS_MAPS:
            raise CalibrationInputError(
                f"multiclass_map must be one of {', '.join(_MULTICLASS_MAPS)}; "
                f"got {self.multiclass_map!r}."
            )
        return _MULTICLASS_MAPS[self.multiclass_map]()

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        variable = _variable(features)
        if weights is not None:  # rows of weight 0 are absent (and move no threshold)
            present = weights > 0
            variable, proba, labels, weights = (variable[present], proba[present],
                                                labels[present], weights[present])
        max_depth = check_positive_int(self.max_depth, "max_depth")
        fraction = check_in_range(self.min_leaf_fraction, "min_leaf_fraction",
                                  low=0.0, high=0.5, inclusive=False)
        min_region_size = check_positive_int(self.min_region_size, "min_region_size")
        if self.split_criterion not in _SPLITTERS:
            raise CalibrationInputError(
                f"split_criterion must be one of {', '.join(_SPLITTERS)}; "
                f"got {self.split_criterion!r}."
            )
        template = self._template(proba.shape[1])
        self.global_model_ = clone(template).fit(proba, labels, sample_weight=weights)

        known = np.isfinite(variable)
        mass = np.ones(labels.size) if weights is None else weights
        min_leaf = max(1, int(fraction * float(mass.sum())))
        if mass[known].sum() >= 2 * min_leaf:
            tree = _SPLITTERS[self.split_criterion](
                variable[known], proba[known], labels[known], max_depth, min_leaf,
                self.random_state, None if weights is None else weights[known],
            )
            self.thresholds_ = tree_thresholds(tree)
        else:
            self.thresholds_ = np.empty(0)

        regions = assign_regions(variable[known], self.thresholds_)
        n_regions = self.thresholds_.size + 1
        self.region_sizes_ = (np.bincount(regions, minlength=n_regions) if weights is None
                              else np.bincount(regions, weights=weights[known],
                                               minlength=n_regions))
        self.region_models_: list[Recalibrator | None] = []
        for region in range(n_regions):
            rows = np.flatnonzero(known)[regions == region]
            usable = (self.region_sizes_[region] >= min_region_size
                      and not _degenerate(proba[rows], labels[rows]))
            self.region_models_.append(
                clone(template).fit(proba[rows], labels[rows],
                                    sample_weight=None if weights is None else weights[rows])
                if usable else None
            )

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        variable = _variable(features)
        known = np.isfinite(variable)
        regions = np.where(known, assign_regions(np.where(known, variable, 0.0), self.thresholds_),
                           -1)
        corrected = np.empty_like(proba)
        for region in np.unique(regions):
            rows = regions == region
            model = self.region_models_[region] if region >= 0 else None
            if model is None:
                model = self.global_model_
            corrected[rows] = model.predict_proba(proba[rows])
        return corrected


def _degenerate(proba: NDArray[np.float64], labels: NDArray[np.intp]) -> bool:
    """Whether a region's own maximum-likelihood map would run off to infinity.

    That happens with a single observed class, with top-label predictions that
    are all right (or all wrong) -- temperature or beta parameters then grow
    without bound and the region's probabilities become 0 and 1 -- and, for
    binary problems, when P(class 1) separates the two classes perfectly.
    """
    if np.unique(labels).size < 2:
        return True
    correct = proba.argmax(axis=1) == labels
    if correct.all() or not correct.any():
        return True
    if proba.shape[1] == 2:
        positive = proba[:, 1]
        return bool(positive[labels == 0].max() < positive[labels == 1].min())
    return False


def _variable(features: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """The single column v from the (n, 1) features the base class hands over."""
    if features is None or features.shape[1] != 1:
        shape = None if features is None else features.shape
        raise CalibrationInputError(
            "VariableTreeCalibration follows one variable: pass features= as the column v, "
            f"shape (n,) or (n, 1); got shape {shape}."
        )
    return features[:, 0]
