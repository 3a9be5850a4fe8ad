"""Similarity-weighted calibration: SWC and SWC-HH.

Wagstaff & Dietterich 2023, §4, Algorithm 2 and eq. 5.

q_t[k] = sum_i s(t, i) 1[y_i = k] / sum_i s(t, i), with s the random-forest
proximity in the augmented space [features, standardized probabilities]
(:mod:`calibcore.heterogeneity.proximity`). SWC weights every calibration row; SWC-HH keeps
only rows with s(t, i) >= HH_t / 2 (HH from :mod:`calibcore.heterogeneity`).
Fallbacks as the reference: a row whose kept similarities sum to zero keeps
p_t; when no row passes the SWC-HH filter, the most similar one is kept.

Eq. 5 gives a class exactly 0 wherever no similar calibration row belongs to it (on
separable data, most rows). ``prior_strength`` = s adds the row's own probabilities as
s pseudo-rows of similarity mass: q_t = (sum_i s(t, i) 1[y_i = k] + s p_t[k]) /
(sum_i s(t, i) + s). The default, 0.01, weighs as much as one calibration row that
shares t's leaf in one tree of 100; s = 0 is eq. 5 as published. The zero-mass
fallback is the limit of this formula, so it needs no special case when s > 0.

Row weights w_i (``sample_weight``) enter twice: the proximity forest is grown with
them, as ``RandomForestClassifier.fit(..., sample_weight=w)`` grows it, and the votes
are q_t[k] = sum_i s(t, i) w_i 1[y_i = k] / sum_i s(t, i) w_i (eq. 5 with row weights;
the prior pseudo-rows keep their mass s). Given the forest, integer weights give the
votes of the rows repeated by their weights exactly (SWC; sums of integers); the forest
itself matches theirs only approximately: its bootstrap draws n rows with probability
proportional to the weights where the repeated rows would draw sum(w) rows uniformly.
Rows of weight 0 are left out before anything is fitted; weights all 1 are no weights.

The fitted state is plain arrays: the forest's node arrays, the calibration
rows' leaf ids and labels (and, for SWC-HH, the calibration rows themselves,
which HH needs); leaves of new rows come from a vectorized traversal. The votes read
from them are in :mod:`calibcore.recalibration._similarity_votes`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils.validation import check_is_fitted

from calibcore._progress import Heartbeat
from calibcore._validation import check_in_range, check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.heterogeneity.hidden import (
    NeighbourhoodCache,
    check_features,
    hidden_heterogeneity_details,
)
from calibcore.heterogeneity.proximity import fit_proximity_forest
from calibcore.recalibration._base import Recalibrator, _to_simplex, register
from calibcore.recalibration._similarity_votes import (
    filtered_votes,
    leaf_means,
    node_votes,
    normalize_votes,
)

__all__ = ["SWC", "SWCHH"]


@register
class SWC(Recalibrator):
    """Similarity-weighted calibration (Wagstaff & Dietterich, Algorithm 2).

    Parameters
    ----------
    n_estimators : int, default=100
        Trees of the proximity forest.
    random_state : int, default=0
        Seed of the proximity forest.
    n_jobs : int or None, default=-1
        Threads used to fit the forest (-1: all cores; the fit does not depend on it).
    prior_strength : float, default=0.01
        Similarity mass of the row's own probabilities added to the votes (0: eq. 5
        as published, which can give a class probability of exactly 0).
    max_calibration_rows : int or None, default=20_000
        Above this many calibration rows, the forest is grown on (and votes come
        from) a seeded uniform sample of this many of them; None uses every row.
        Fully grown trees on n rows cost O(n log n) each and their leaves O(depth)
        per row: 300,000 rows took about 40 s per fit, 20,000 rows a second or two.

    Attributes
    ----------
    forest_ : dict of ndarray
        Node arrays of the proximity forest (:class:`~calibcore.heterogeneity.TreeEnsemble`)
        and the standardization of the probability columns.
    calibration_leaves_ : ndarray of shape (n_cal, n_estimators)
        Global leaf id of each calibration row in each tree.
    calibration_labels_ : ndarray of shape (n_cal,)
    calibration_weights_ : ndarray of shape (n_cal,) or None
        Row weights of the calibration rows kept (None: fitted without weights).
    n_features_in_ : int
        Feature columns d (the probabilities are added to them).
    """

    method = "swc"
    display_name = "SWC (similarity-weighted)"
    needs_features = True
    supports_weights = True
    fitted_attributes: ClassVar[tuple[str, ...]] = (
        "forest_", "calibration_leaves_", "calibration_labels_", "n_features_in_",
        "calibration_weights_",
    )
    #: documents written before weights were taken have none
    calibration_weights_: NDArray[np.float64] | None = None

    def __init__(
        self, *, n_estimators: int = 100, random_state: int = 0, n_jobs: int | None = -1,
        prior_strength: float = 0.01, max_calibration_rows: int | None = 20_000,
    ) -> None:
        self.n_estimators = n_estimators
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.prior_strength = prior_strength
        self.max_calibration_rows = max_calibration_rows

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        self._fit_forest(*self._calibration_rows(proba, labels, features, weights), heartbeat)

    def _calibration_rows(
        self, proba: NDArray[np.float64], labels: NDArray[np.intp],
        features: NDArray[np.float64] | None, weights: NDArray[np.float64] | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.float64],
               NDArray[np.float64] | None]:
        """The calibration rows to use (all of positive weight, or the seeded sample of
        them), validated, with their weights (None when unweighted)."""
        features = check_features(features, proba.shape[0])
        check_in_range(self.prior_strength, "prior_strength", low=0.0, high=1e6)
        if weights is not None:
            present = np.flatnonzero(weights > 0)
            proba, labels, features, weights = (proba[present], labels[present],
                                                features[present], weights[present])
            if bool(np.all(weights == 1.0)):
                weights = None  # weights 0 and 1 only: the rows of weight 1, unweighted
        kept = self._calibration_sample(proba.shape[0])
        if kept is None:
            return proba, labels, features, weights
        return (proba[kept], labels[kept], features[kept],
                None if weights is None else weights[kept])

    def _fit_forest(
        self, proba: NDArray[np.float64], labels: NDArray[np.intp],
        features: NDArray[np.float64], weights: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> None:
        def growing(done: float) -> None:
            heartbeat(0.9 * done, f"growing the proximity forest ({done:.0%} of the trees)")

        forest = fit_proximity_forest(
            features, proba, labels, n_estimators=self.n_estimators,
            random_state=self.random_state, n_jobs=self.n_jobs, heartbeat=growing,
            sample_weight=weights,
        )
        heartbeat.now(0.9, "finding the leaves of the calibration rows")
        self.forest_ = {
            **forest.trees.to_arrays(),
            "probability_mean": forest.probability_mean,
            "probability_scale": forest.probability_scale,
        }
        self.calibration_leaves_ = forest.apply(features, proba, heartbeat).astype(np.int32)
        self.calibration_labels_ = labels.astype(np.int32)
        self.calibration_weights_ = None if weights is None else weights.astype(np.float64)
        self.n_features_in_ = int(features.shape[1])

    def _calibration_sample(self, n_rows: int) -> NDArray[np.intp] | None:
        """The seeded sample of calibration rows to use, or None for all of them; says
        which in ``sampling_note_`` (not saved with the model)."""
        limit = self.max_calibration_rows
        if limit is not None:
            limit = check_positive_int(limit, "max_calibration_rows", minimum=2)
        if limit is None or n_rows <= limit:
            self.sampling_note_ = ""
            return None
        self.sampling_note_ = (
            f"{self.display_name}: the proximity forest was grown on a seeded sample of "
            f"{limit:,} of the {n_rows:,} calibration rows (max_calibration_rows), whose "
            "labels give the votes.")
        rng = np.random.default_rng([self.random_state, 2])
        return np.sort(rng.choice(n_rows, size=limit, replace=False))

    def _predict(self, proba: NDArray[np.float64], features: NDArray[np.float64] | None,
                 heartbeat: Heartbeat) -> NDArray[np.float64]:
        checked = self._check_features_like_fit(features, proba.shape[0])
        votes = leaf_means(self.forest_, self._node_counts(), checked, proba,
                           heartbeat, "similarity-weighted label counts")
        return self._normalize_votes(votes, proba)

    def calibration_support(self, y_prob: ArrayLike, features: ArrayLike) -> NDArray[np.float64]:
        """S_t = sum_i s(t, i) over all calibration rows, per row.

        The calibration support of Wagstaff & Dietterich 2023, eq. 6; fitted with row
        weights, sum_i s(t, i) w_i.

        Parameters
        ----------
        y_prob : array-like of shape (n,) or (n, K)
        features : array-like of shape (n, d)

        Returns
        -------
        ndarray of shape (n,)
            Expected number (weight) of calibration rows sharing a leaf with the row.
        """
        check_is_fitted(self, "forest_")
        proba = self._checked_proba(y_prob)
        checked = self._check_features_like_fit(features, proba.shape[0])
        return leaf_means(self.forest_, self._node_counts().sum(axis=1), checked, proba)

    def _check_features_like_fit(
        self, features: ArrayLike | None, n_rows: int
    ) -> NDArray[np.float64]:
        checked = check_features(features, n_rows)
        if checked.shape[1] != self.n_features_in_:
            raise CalibrationInputError(
                f"features have {checked.shape[1]} columns but {type(self).__name__} was "
                f"fitted on {self.n_features_in_}."
            )
        return checked

    def _normalize_votes(
        self, votes: NDArray[np.float64], proba: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Eq. 5 with the prior pseudo-rows; rows with no mass at all keep p_t."""
        return normalize_votes(votes, proba, float(self.prior_strength))

    def _calibration_weights(self) -> NDArray[np.float64] | None:
        weights = self.calibration_weights_
        return None if weights is None else np.asarray(weights, dtype=np.float64)

    def _node_counts(self) -> NDArray[np.int64] | NDArray[np.float64]:
        """Rows (weight, when fitted with weights) of each class reaching each node."""
        return node_votes(self.forest_, self.calibration_leaves_, self.calibration_labels_,
                          self.n_classes_, self._calibration_weights())


@register
class SWCHH(SWC):
    """SWC restricted to calibration rows with similarity >= HH_t / 2.

    SWC-HH of Wagstaff & Dietterich 2023, §4. HH_t is computed on the calibration rows
    stored at fit time, with the same ``random_state`` (as the reference, which seeds both with 0).

    With ``sample_weight`` the forest and the votes are weighted as in :class:`SWC` (the
    kept rows vote s(t, i) w_i), and so is the filter's HH_t (its local forests and
    neighbourhood Brier scores weighted, as :func:`~calibcore.heterogeneity.hidden_heterogeneity`
    weighs them); the threshold HH_t / 2 is on the similarity s(t, i) alone. Integer
    weights give the repeated rows' votes only approximately (bootstrapped forests).

    Parameters
    ----------
    n_estimators : int, default=100
    radius : float, default=0.1
        Hellinger radius of the HH neighbourhoods.
    random_state : int, default=0
    n_jobs : int or None, default=-1
        Threads for the forest fit and for HH (-1: all cores; results do not depend on
        it).
    prior_strength, max_calibration_rows
        As :class:`SWC` (HH is then computed against the sampled calibration rows).
    hh_grid : float in [1e-6, 1] or None, default=0.005
        HH_t of each row is that of its probabilities rounded to this step in sqrt(p)
        (a neighbourhood centre within Hellinger distance 0.0025 sqrt(K / 2) of the
        row's own, 2.5% of the default radius for two classes), so rows rounding alike
        share one local forest (``grid`` of
        :func:`~calibcore.heterogeneity.hidden_heterogeneity_details`). On default_nb:
        204 forests instead of 850, 8 times faster, mean HH 0.01293 against 0.01300.
        None gives the paper's HH_t exactly.

    Attributes
    ----------
    forest_, calibration_leaves_, calibration_labels_
        As :class:`SWC`.
    calibration_features_ : ndarray of shape (n_cal, d)
    calibration_probabilities_ : ndarray of shape (n_cal, K)
        The calibration rows SWC kept (all, or the seeded sample).
    """

    method = "swc_hh"
    display_name = "SWC-HH (similarity-weighted, HH filter)"
    fitted_attributes: ClassVar[tuple[str, ...]] = (
        *SWC.fitted_attributes, "calibration_features_", "calibration_probabilities_",
    )
    #: documents written before hh_grid existed used the exact HH_t
    legacy_params: ClassVar[dict[str, Any]] = {"hh_grid": None}

    def __init__(
        self,
        *,
        n_estimators: int = 100,
        radius: float = 0.1,
        random_state: int = 0,
        n_jobs: int | None = -1,
        prior_strength: float = 0.01,
        max_calibration_rows: int | None = 20_000,
        hh_grid: float | None = 0.005,
    ) -> None:
        super().__init__(n_estimators=n_estimators, random_state=random_state, n_jobs=n_jobs,
                         prior_strength=prior_strength,
                         max_calibration_rows=max_calibration_rows)
        self.radius = radius
        self.hh_grid = hh_grid

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        if self.hh_grid is not None:  # refused before the forest is grown
            check_in_range(self.hh_grid, "hh_grid", low=1e-6, high=1.0)
        proba, labels, checked, weights = self._calibration_rows(proba, labels, features,
                                                                 weights)
        self._fit_forest(proba, labels, checked, weights, heartbeat)
        self.__dict__.pop("_neighbourhood_results", None)  # results of an earlier fit
        self.calibration_features_ = checked
        self.calibration_probabilities_ = proba

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        # the local forests, then the votes (as long on default_nb: 2 s and 3-4 s), each
        # reporting how far it is, so the bar moves through both
        def report(done: int, total: int) -> None:
            heartbeat.now(0.5 * done / max(total, 1),
                          f"hidden heterogeneity: {done:,} of {total:,} local forests")

        def voted(done: int, total: int) -> None:
            heartbeat(0.5 + 0.5 * done / max(total, 1),
                      f"similarity votes: {done:,} of {total:,} rows")

        hh = self.heterogeneity(proba, progress=report)
        return self._filtered_votes(proba, features, hh, heartbeat, voted)

    def heterogeneity(
        self, proba: ArrayLike, *, progress: Callable[[int, int], None] | None = None
    ) -> NDArray[np.float64]:
        """HH_t of each row against the stored calibration rows.

        ``progress`` is passed to :func:`~calibcore.heterogeneity.hidden_heterogeneity`.
        """
        check_is_fitted(self, "forest_")
        return hidden_heterogeneity_details(
            self.calibration_features_, self.calibration_labels_,
            self.calibration_probabilities_, proba, radius=self.radius,
            random_state=self.random_state, n_jobs=self.n_jobs, progress=progress,
            cache=self._local_forests(), grid=self.hh_grid,
            sample_weight=self.calibration_weights_,
        ).values

    def _local_forests(self) -> NeighbourhoodCache:
        """Local-forest results by neighbourhood, kept between predictions (not serialized).

        Rows of the same neighbourhood get the same HH in every call, so scoring
        the calibration rows after the test rows fits only the forests of
        neighbourhoods not seen yet.
        """
        cache: NeighbourhoodCache | None = self.__dict__.get("_neighbourhood_results")
        if cache is None:
            cache = self.__dict__["_neighbourhood_results"] = {}
        return cache

    def predict_with_heterogeneity(
        self, y_prob: ArrayLike, features: ArrayLike, hh: ArrayLike
    ) -> NDArray[np.float64]:
        """SWC-HH probabilities given precomputed HH_t (shape (n,)), e.g. from a report.

        Equal to :meth:`predict_proba` when ``hh`` is :meth:`heterogeneity` of the rows.
        """
        check_is_fitted(self, "forest_")
        proba = self._checked_proba(y_prob)
        return _to_simplex(self._filtered_votes(proba, features, hh))

    def _filtered_votes(
        self, proba: NDArray[np.float64], features: ArrayLike | None, hh: ArrayLike,
        heartbeat: Callable[[], None] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> NDArray[np.float64]:
        checked = self._check_features_like_fit(features, proba.shape[0])
        thresholds = np.asarray(hh, dtype=np.float64) / 2.0
        if thresholds.shape != (proba.shape[0],):
            raise CalibrationInputError(
                f"hh must have shape ({proba.shape[0]},); got {thresholds.shape}."
            )
        votes = filtered_votes(self.forest_, checked, proba, thresholds, self.calibration_leaves_,
                               self.calibration_labels_, self._calibration_weights(), heartbeat,
                               progress)
        return self._normalize_votes(votes, proba)

