"""Global calibration measures, their bootstrap intervals, the test of calibration and
reliability diagrams, with the binning and kernels they rest on.

The public names of its modules, re-exported here:

- :mod:`calibcore.metrics.binning`: Bin edges and bin assignment shared by every binned
  measure.
- :mod:`calibcore.metrics.bootstrap`: Percentile bootstrap interval of any scalar measure,
  resampling rows.
- :mod:`calibcore.metrics.calibration_test`: Is it calibrated at all? A test of calibration
  by consistency resampling.
- :mod:`calibcore.metrics.calibration_views`: One verdict, checked in every view: the test
  of calibration where views can disagree.
- :mod:`calibcore.metrics.consistent`: Consistent calibration measures of Błasiok et al.
  2023, "A Unifying Theory of Distance from Calibration".
- :mod:`calibcore.metrics.cumulative`: Cumulative calibration errors: the
  Kolmogorov-Smirnov and Kuiper statistics of the cumulative difference between outcomes
  and scores.
- :mod:`calibcore.metrics.kernel_smoothing`: Smooth ECE: reflected-Gaussian kernel smoothing
  on a grid.
- :mod:`calibcore.metrics.measures`: Global calibration measures.
- :mod:`calibcore.metrics.proportions`: Confidence intervals of proportions that contain
  their estimate.
- :mod:`calibcore.metrics.reliability`: Reliability diagrams: binned with per-bin 95%
  intervals, and smooth (kernel-smoothed, relplot's construction) with a bootstrap band.
- :mod:`calibcore.metrics.smooth_calibration`: Exact smooth calibration error on a path: an
  O(n log n) dual solver (Błasiok et al. 2023, §7).
- :mod:`calibcore.metrics.uncertainty`: Bootstrap intervals for global calibration measures.
"""

from calibcore.metrics._resampling import ROW_BOOTSTRAP_MAX_ROWS
from calibcore.metrics._sorting import sort_view_ahead
from calibcore.metrics.binning import (
    Binning,
    assign_bins,
    bin_edges,
    bin_sums,
    equal_mass_edges,
    equal_width_edges,
    sorted_weighted_equal_mass_edges,
    weighted_equal_mass_edges,
)
from calibcore.metrics.bootstrap import (
    Interval,
    bootstrap_interval,
    percentiles,
)
from calibcore.metrics.calibration_test import (
    LEVEL,
    CalibrationTestResult,
    ScoreGroups,
    Statistic,
    TestView,
    consistency_resampling_test,
    grouped_scores_test,
    grouped_scores_tests,
    pooled_groups,
    scores_test,
)
from calibcore.metrics.calibration_views import (
    CUMULATIVE_STATISTICS,
    ViewedCalibrationTest,
    calibration_and_cumulative_tests,
    calibration_tests_by_view,
    checked_in_views,
    cumulative_tests_by_view,
)
from calibcore.metrics.consistent import (
    INTERVAL_PRECISION,
    RowKernel,
    Vector,
    ViewProblem,
    binned_ece_plus_width,
    binned_rows,
    interval_calibration_error,
    interval_rows,
    laplace_kernel_calibration_error,
    laplace_kernel_rows,
    shifted_interval_rows,
    smooth_calibration_error,
    smooth_ece,
    view_problems,
)
from calibcore.metrics.cumulative import (
    cumulative_curve,
    ks_calibration_error,
    ks_rows,
    kuiper_calibration_error,
    kuiper_rows,
)
from calibcore.metrics.kernel_smoothing import (
    DENSITY_EPS,
    KernelSmoother,
    grid_size,
    interpolate,
    reflected_gaussian_convolve,
    smooth_ece_rows,
)
from calibcore.metrics.measures import (
    NLL_CLIP,
    accuracy,
    binary_brier_score,
    brier_score,
    classwise_expected_calibration_error,
    ece_by_bin_count,
    ece_by_bin_count_per_binning,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
)
from calibcore.metrics.proportions import (
    INTERVAL_METHODS,
    INTERVAL_NAMES,
    IntervalMethod,
    proportion_interval,
)
from calibcore.metrics.reliability import (
    BinnedReliability,
    SmoothReliability,
    binned_reliability,
    diagram_of_sums,
    smooth_reliability,
    smooth_reliability_of_groups,
    with_interval,
)
from calibcore.metrics.smooth_calibration import (
    path_smooth_calibration,
    smooth_calibration_rows,
)
from calibcore.metrics.uncertainty import (
    BLOCK_ELEMENTS,
    CALIBRATION_ERRORS,
    MEASURES,
    GlobalMeasures,
    MeasureEstimate,
    MeasureName,
    global_measures,
    resample_blocks,
    resample_counts,
    subsample_plan,
)

__all__ = [
    "BLOCK_ELEMENTS",
    "CALIBRATION_ERRORS",
    "CUMULATIVE_STATISTICS",
    "DENSITY_EPS",
    "INTERVAL_METHODS",
    "INTERVAL_NAMES",
    "INTERVAL_PRECISION",
    "LEVEL",
    "MEASURES",
    "NLL_CLIP",
    "ROW_BOOTSTRAP_MAX_ROWS",
    "BinnedReliability",
    "Binning",
    "CalibrationTestResult",
    "GlobalMeasures",
    "Interval",
    "IntervalMethod",
    "KernelSmoother",
    "MeasureEstimate",
    "MeasureName",
    "RowKernel",
    "ScoreGroups",
    "SmoothReliability",
    "Statistic",
    "TestView",
    "Vector",
    "ViewProblem",
    "ViewedCalibrationTest",
    "accuracy",
    "assign_bins",
    "bin_edges",
    "bin_sums",
    "binary_brier_score",
    "binned_ece_plus_width",
    "binned_reliability",
    "binned_rows",
    "bootstrap_interval",
    "brier_score",
    "calibration_and_cumulative_tests",
    "calibration_tests_by_view",
    "checked_in_views",
    "classwise_expected_calibration_error",
    "consistency_resampling_test",
    "cumulative_curve",
    "cumulative_tests_by_view",
    "diagram_of_sums",
    "ece_by_bin_count",
    "ece_by_bin_count_per_binning",
    "equal_mass_edges",
    "equal_width_edges",
    "expected_calibration_error",
    "global_measures",
    "grid_size",
    "grouped_scores_test",
    "grouped_scores_tests",
    "interpolate",
    "interval_calibration_error",
    "interval_rows",
    "ks_calibration_error",
    "ks_rows",
    "kuiper_calibration_error",
    "kuiper_rows",
    "laplace_kernel_calibration_error",
    "laplace_kernel_rows",
    "maximum_calibration_error",
    "negative_log_likelihood",
    "path_smooth_calibration",
    "percentiles",
    "pooled_groups",
    "proportion_interval",
    "reflected_gaussian_convolve",
    "resample_blocks",
    "resample_counts",
    "scores_test",
    "shifted_interval_rows",
    "smooth_calibration_error",
    "smooth_calibration_rows",
    "smooth_ece",
    "smooth_ece_rows",
    "smooth_reliability",
    "smooth_reliability_of_groups",
    "sort_view_ahead",
    "sorted_weighted_equal_mass_edges",
    "subsample_plan",
    "view_problems",
    "weighted_equal_mass_edges",
    "with_interval",
]
