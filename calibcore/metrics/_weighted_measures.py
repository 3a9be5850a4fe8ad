"""Every global measure of one data set as a function of (b, n) row weights.

The engine of :func:`calibcore.metrics.global_measures`: a row of weights is the
data itself (ones) or a bootstrap resample (counts), and each measure's ``*_rows``
kernel evaluates a block of rows as one array operation (binned sums through
``bincount``, kCE and intCE through cumulative sums over the sorted scores).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from calibcore._validation import row_sums
from calibcore.data.views import View, top_class
from calibcore.metrics._classwise_binned import ClasswiseBins
from calibcore.metrics.binning import Binning
from calibcore.metrics.consistent import (
    Vector,
    ViewProblem,
    binned_rows,
    interval_rows,
    laplace_kernel_rows,
    view_problems,
)
from calibcore.metrics.kernel_smoothing import smooth_ece_rows
from calibcore.metrics.measures import NLL_CLIP
from calibcore.metrics.smooth_calibration import smooth_calibration_rows

MeasureName = Literal[
    "ece",
    "mce",
    "classwise_ece",
    "brier",
    "binary_brier",
    "nll",
    "accuracy",
    "binned_ece_plus_width",
    "interval_calibration_error",
    "laplace_kernel_calibration_error",
    "smooth_calibration_error",
    "smooth_ece",
]


def row_losses(
    labels: NDArray[np.intp], proba: NDArray[np.float64]
) -> dict[MeasureName, NDArray[np.float64]]:
    """Each row's Brier (summed over classes), NLL, correct top label and, for two
    classes, binary Brier: the measures that are means over rows."""
    true_class = proba[np.arange(labels.size), labels]
    losses: dict[MeasureName, NDArray[np.float64]] = {
        "brier": row_sums(np.square(proba)) - 2.0 * true_class + 1.0,
        "nll": -np.log(np.clip(true_class, NLL_CLIP, 1.0)),
        "accuracy": (top_class(proba)[0] == labels).astype(np.float64),
    }
    if proba.shape[1] == 2:
        losses["binary_brier"] = np.square(proba[:, 1] - (labels == 1))
    return losses


class WeightedMeasures:
    """The per-row quantities every measure needs: losses (Brier, NLL, accuracy) and
    the view's and the classwise binary problems, with binning options."""

    def __init__(
        self,
        losses: dict[MeasureName, NDArray[np.float64]],
        problems: list[ViewProblem],
        classwise: list[ViewProblem],
        n_bins: int,
        binning: Binning,
    ) -> None:
        self.losses, self.problems, self.classwise = losses, problems, classwise
        self.n_bins, self.binning = n_bins, binning
        self._classwise_bins: ClasswiseBins | None = None

    def _classwise_binned(
        self, weights: NDArray[np.float64], binning: Binning
    ) -> NDArray[np.float64] | None:
        """ECE and MCE averaged over the classwise problems, shape (2, b), all classes in
        one pass (:mod:`calibcore.metrics._classwise_binned`); None for equal-mass bins
        (edges of their own per class and resample) or problems kept sorted."""
        if binning != "equal_width" or any(p.order is not None for p in self.classwise):
            return None
        if self._classwise_bins is None:
            self._classwise_bins = ClasswiseBins([p.scores for p in self.classwise],
                                                 [p.residuals for p in self.classwise],
                                                 self.n_bins)
        ece, mce = self._classwise_bins.rows(weights)
        return np.stack([ece.mean(axis=1), mce.mean(axis=1)])

    @property
    def _view_is_classwise(self) -> bool:
        return [p.label for p in self.problems] == [p.label for p in self.classwise]

    @classmethod
    def of_rows(
        cls,
        labels: NDArray[np.intp],
        proba: NDArray[np.float64],
        view: View,
        n_bins: int,
        binning: Binning,
    ) -> WeightedMeasures:
        """The quantities of validated rows."""
        return cls(row_losses(labels, proba), view_problems(labels, proba, view),
                   view_problems(labels, proba, "classwise", sort=False), n_bins, binning)

    def grouped(self, groups: NDArray[np.intp], counts: NDArray[np.float64],
                sample_weight: NDArray[np.float64] | None = None) -> WeightedMeasures:
        """The same quantities with the rows of each group merged into one weighted row
        (its mean score, residual and losses; means weighted by ``sample_weight`` when
        given): the measures with weights ``counts`` (times the groups' mean weights)
        are those of the rows with every score moved to its group's mean."""
        mass = None
        if sample_weight is not None:
            mass = np.bincount(groups, weights=sample_weight, minlength=counts.size)

        def mean(values: NDArray[np.float64], row_groups: NDArray[np.intp],
                 order: NDArray[np.intp] | None = None) -> Vector:
            plain = np.bincount(row_groups, weights=values, minlength=counts.size) / counts
            if sample_weight is None or mass is None:
                return plain
            row_weights = sample_weight if order is None else sample_weight[order]
            weighted = np.bincount(row_groups, weights=values * row_weights,
                                   minlength=counts.size)
            return np.divide(weighted, mass, out=plain, where=mass > 0)

        def merge(problem: ViewProblem) -> ViewProblem:
            row_groups = groups if problem.order is None else groups[problem.order]
            scores = mean(problem.scores, row_groups, problem.order)
            residuals = mean(problem.residuals, row_groups, problem.order)
            if problem.order is None:
                return ViewProblem(problem.label, scores, residuals, None)
            order = np.argsort(scores, kind="stable")
            return ViewProblem(problem.label, scores[order], residuals[order], order)

        losses = {key: mean(loss, groups) for key, loss in self.losses.items()}
        return WeightedMeasures(losses, [merge(p) for p in self.problems],
                                [merge(p) for p in self.classwise], self.n_bins, self.binning)

    def quantities(self) -> dict[str, Vector]:
        """Every per-row quantity, in row order: the losses and each problem's scores
        and residuals (what a partition sums per resampling cell)."""
        out: dict[str, Vector] = {f"loss:{key}": value for key, value in self.losses.items()}
        for group, problems in (("view", self.problems), ("classwise", self.classwise)):
            for index, problem in enumerate(problems):
                scores, residuals = problem.scores, problem.residuals
                if problem.order is not None:
                    scores, residuals = np.empty_like(scores), np.empty_like(residuals)
                    scores[problem.order] = problem.scores
                    residuals[problem.order] = problem.residuals
                out[f"{group}:{index}:score"] = scores
                out[f"{group}:{index}:residual"] = residuals
        return out

    def with_quantities(self, quantities: dict[str, Vector]) -> WeightedMeasures:
        """These problems (labels, sorted or not) on other rows, given their
        :meth:`quantities`."""

        def problem(group: str, index: int, template: ViewProblem) -> ViewProblem:
            scores = quantities[f"{group}:{index}:score"]
            residuals = quantities[f"{group}:{index}:residual"]
            if template.order is None:
                return ViewProblem(template.label, scores, residuals, None)
            order = np.argsort(scores, kind="stable")
            return ViewProblem(template.label, scores[order], residuals[order], order)

        losses = {key: quantities[f"loss:{key}"] for key in self.losses}
        return WeightedMeasures(
            losses, [problem("view", i, p) for i, p in enumerate(self.problems)],
            [problem("classwise", i, p) for i, p in enumerate(self.classwise)],
            self.n_bins, self.binning)

    @staticmethod
    def _average(
        problems: list[ViewProblem],
        weights: list[NDArray[np.float64]],
        kernel: Callable[..., NDArray[np.float64]],
    ) -> NDArray[np.float64]:
        per_problem = [
            kernel(problem.scores, problem.residuals, problem_weights)
            for problem, problem_weights in zip(problems, weights, strict=True)
        ]
        return np.mean(per_problem, axis=0)

    def _binned(self, binning: Binning) -> Callable[..., NDArray[np.float64]]:
        def kernel(scores: Vector, residuals: Vector, weights: Vector) -> Vector:
            return np.stack(binned_rows(scores, residuals, weights, self.n_bins, binning))

        return kernel

    def rows(
        self, keys: Sequence[MeasureName], weights: NDArray[np.float64], skip_smce: bool
    ) -> dict[MeasureName, NDArray[np.float64]]:
        """Each requested measure for each row of ``weights``, shape (b,)."""
        out: dict[MeasureName, NDArray[np.float64]] = {}
        totals = weights.sum(axis=1)
        for key, loss in self.losses.items():
            if key in keys:
                # einsum, not BLAS gemv: the latter stalls waking threads on a busy machine.
                out[key] = np.einsum("bi,i->b", weights, loss) / totals
        # the views' problems in their own row order, gathered only when a kernel needs them
        view_weights: list[NDArray[np.float64]] = []

        def in_view_order() -> list[NDArray[np.float64]]:
            if not view_weights:
                view_weights.extend(problem.reorder(weights) for problem in self.problems)
            return view_weights

        classwise_view = self._view_is_classwise

        def view_binned(binning: Binning) -> NDArray[np.float64]:
            together = self._classwise_binned(weights, binning) if classwise_view else None
            if together is not None:
                return together
            return self._average(self.problems, in_view_order(), self._binned(binning))

        if {"ece", "mce"} & set(keys):
            out["ece"], out["mce"] = view_binned(self.binning)
        if "classwise_ece" in keys:
            together = self._classwise_binned(weights, self.binning)
            if together is None:
                class_weights = [problem.reorder(weights) for problem in self.classwise]
                together = self._average(self.classwise, class_weights,
                                         self._binned(self.binning))
            out["classwise_ece"] = together[0]
        if "binned_ece_plus_width" in keys:
            ece = (
                out["ece"]
                if self.binning == "equal_width" and "ece" in out
                else view_binned("equal_width")[0]
            )
            out["binned_ece_plus_width"] = ece + 1.0 / self.n_bins
        kernels: dict[MeasureName, Callable[..., NDArray[np.float64]]] = {
            "interval_calibration_error": interval_rows,
            "laplace_kernel_calibration_error": laplace_kernel_rows,
            "smooth_ece": lambda s, r, w: smooth_ece_rows(s, r, w)[0],
            "smooth_calibration_error": smooth_calibration_rows,
        }
        for key, kernel in kernels.items():
            if key in keys and not (skip_smce and key == "smooth_calibration_error"):
                out[key] = self._average(self.problems, in_view_order(), kernel)
        return out
