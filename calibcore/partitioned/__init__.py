"""Exact diagnostics of partitioned tables on Dask: mergeable summaries, exact quantiles,
the global measures and the variables.

The public names of its modules, re-exported here:

- :mod:`calibcore.partitioned.binned_summaries`: The bin sums of prediction rows:
  mergeable, and exact for the binned global measures on any partitioning.
- :mod:`calibcore.partitioned.equal_mass`: ECE, MCE and classwise ECE of a partitioned
  table with equal-mass bins, exactly, on Dask.
- :mod:`calibcore.partitioned.exact_quantiles`: Equal-mass bin edges of scores spread over
  many parts, exactly, in two passes.
- :mod:`calibcore.partitioned.measures`: Exact global measures of a partitioned table on
  Dask.
- :mod:`calibcore.partitioned.partitions`: The partitions of a table on Dask as the engine
  reads them.
- :mod:`calibcore.partitioned.score_summaries`: The rows at each distinct score of one
  view: mergeable, and exact for the bin-free measures (intCE, kCE, smooth ECE) and the
  test of calibration of a partitioned table.
- :mod:`calibcore.partitioned.summaries`: Mergeable summaries of prediction rows: the
  views they serve, and the resampling cells.
- :mod:`calibcore.partitioned.variables`: Variable-based calibration of a partitioned table
  on Dask (Kelly & Smyth 2023).
- :mod:`calibcore.partitioned.weighting`: Row weights of a partitioned table, partition by
  partition.
"""

from calibcore.partitioned.binned_summaries import (
    LOSSES,
    BinnedSummary,
    binned_ece,
    binned_mce,
    merge_all,
)
from calibcore.partitioned.equal_mass import partitioned_equal_mass
from calibcore.partitioned.exact_quantiles import (
    CELLS,
    COARSE_SHIFT,
    FloatCells,
    cell_counts,
    cell_of,
    cell_values,
    coarse_counts,
    float_keys,
    key_floats,
    linear_quantile_ranks,
    merge_coarse_counts,
    merge_values,
    merged_equal_mass_edges,
    rank_cells,
    target_cells,
    weighted_linear_quantiles,
)
from calibcore.partitioned.measures import (
    classes_and_crowded_views,
    compute_reporting,
    measures_with_intervals,
    partition_cells,
    partitioned_measures,
    partitioned_summaries,
    partitioned_summary,
    summarize_partition,
)
from calibcore.partitioned.partitions import (
    checked_roles,
    checked_weighting,
    each_partition,
    partition_classes,
    partition_rows,
)
from calibcore.partitioned.score_summaries import (
    FROM_SCORES,
    ScoreSummary,
    calibration_tests_of_scores,
)
from calibcore.partitioned.summaries import (
    CELL_ERROR_BOUND,
    FROM_CELLS,
    VIEW_LABELS,
    CellSummary,
    check_summary_view,
    empty_classes,
)
from calibcore.partitioned.variables import (
    MAX_HISTOGRAM_VALUES,
    STATISTICS,
    PartitionedVariable,
    PartitionedVariables,
    partitioned_variables,
    qcut_levels,
    variables_of_parts,
)
from calibcore.partitioned.weighting import Weighting, checked_negative_rate, row_weights

__all__ = [
    "CELLS",
    "CELL_ERROR_BOUND",
    "COARSE_SHIFT",
    "FROM_CELLS",
    "FROM_SCORES",
    "LOSSES",
    "MAX_HISTOGRAM_VALUES",
    "STATISTICS",
    "VIEW_LABELS",
    "BinnedSummary",
    "CellSummary",
    "FloatCells",
    "PartitionedVariable",
    "PartitionedVariables",
    "ScoreSummary",
    "Weighting",
    "binned_ece",
    "binned_mce",
    "calibration_tests_of_scores",
    "cell_counts",
    "cell_of",
    "cell_values",
    "check_summary_view",
    "checked_negative_rate",
    "checked_roles",
    "checked_weighting",
    "classes_and_crowded_views",
    "coarse_counts",
    "compute_reporting",
    "each_partition",
    "empty_classes",
    "float_keys",
    "key_floats",
    "linear_quantile_ranks",
    "measures_with_intervals",
    "merge_all",
    "merge_coarse_counts",
    "merge_values",
    "merged_equal_mass_edges",
    "partition_cells",
    "partition_classes",
    "partition_rows",
    "partitioned_equal_mass",
    "partitioned_measures",
    "partitioned_summaries",
    "partitioned_summary",
    "partitioned_variables",
    "qcut_levels",
    "rank_cells",
    "row_weights",
    "summarize_partition",
    "target_cells",
    "variables_of_parts",
    "weighted_linear_quantiles",
]
