"""The offline report: every diagnostic of one prediction file, as a JSON-able dict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from app.services import diagnostics, variables
from app.services.clinical import clinical_section
from app.services.datasets import without_left_out
from app.services.decision import decision_document
from app.services.jsonable import jsonable
from app.services.models_compare import comparison_document, model_probabilities
from app.services.partitioned_files import dask_client, first_rows, read_partitioned
from app.services.roles import RoleOverrides, apply_overrides
from app.services.tables import load_table
from app.services.weighting import (
    weighted_caption,
    weighting,
)
from calibcore.data import (
    SPLIT_VALUES,
    ColumnRoles,
    View,
    build_prediction_set,
    default_view,
    infer_roles,
)
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import CUMULATIVE_STATISTICS, IntervalMethod, with_interval
from calibcore.partitioned import (
    CELL_ERROR_BOUND,
    BinnedSummary,
    CellSummary,
    ScoreSummary,
    calibration_tests_of_scores,
    check_summary_view,
    classes_and_crowded_views,
    compute_reporting,
    measures_with_intervals,
    partitioned_equal_mass,
    partitioned_summaries,
    partitioned_variables,
)

if TYPE_CHECKING:
    import dask.dataframe as dd


def build_report(path: Path, *, view: View | None = None, n_bins: int = 15,
                 n_bootstrap: int = 200, drop_missing: bool = False,
                 weight: str | None = None,
                 negative_rate: float | None = None,
                 interval: IntervalMethod = "wilson") -> dict[str, Any]:
    """Infer roles, validate, and compute every global measure (with bootstrap intervals)
    and the test of calibration, the bin sensitivity of binned ECE, the binned and smooth
    reliability diagrams, the clinical calibration report (class 1 of a binary file, each
    class against the rest of more), the VECE ranking of the features (Kelly & Smyth 2023)
    with permutation p-values, and the decision curve (Vickers & Elkin 2006) of every row.
    ``view`` defaults to the positive view for two classes (the top-label view can fold
    over- and under-prediction of class 1 into zero), the top label for more.
    ``drop_missing`` leaves out the rows with a missing label or probability (counted in
    ``n_left_out`` and the warnings) instead of refusing the file. ``weight`` names the
    row-weight column (default: one named weight, weights, sample_weight or
    sample_weights, if any) and ``negative_rate`` weighs the negatives of a log that kept
    that fraction of them by 1 / rate; the measures, diagrams and test are then weighted,
    and the sections that do not take weights yet say so. ``interval`` is the binned
    diagram's per-bin interval: Wilson's or Clopper-Pearson's exact one."""
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    table = load_table(path, path.name)
    guess = infer_roles(table.frame)
    roles = guess.to_roles()
    if weight is not None:
        if weight not in table.frame.columns:
            raise CalibrationInputError(f"--weight: no column named {weight!r}.",
                                        code="column_not_found", column=weight)
        roles = replace(roles, weight=weight,
                        features=tuple(c for c in roles.features if c != weight))
    prediction_set = build_prediction_set(table.frame, roles, drop_missing=drop_missing,
                                          negative_rate=negative_rate)
    frame = without_left_out(table.frame, prediction_set)
    view = view or default_view(prediction_set.n_classes)
    subsets: list[diagnostics.Subset] = ["all"]
    if prediction_set.split is not None:
        subsets.append("test")
    return {
        "file": str(path),
        "view": view,
        "n_rows": prediction_set.n_rows,
        "n_left_out": int(prediction_set.left_out.size),
        "classes": list(prediction_set.classes),
        "roles": {"label": prediction_set.roles.label,
                  "probabilities": list(prediction_set.roles.probabilities),
                  "features": list(prediction_set.roles.features),
                  "split": prediction_set.roles.split, "id": prediction_set.roles.id,
                  "models": [[name, list(group)] for name, group in prediction_set.roles.models],
                  "weight": prediction_set.roles.weight},
        "negative_rate": negative_rate,
        **weighting(prediction_set),
        "warnings": [*table.warnings, *guess.notes, *prediction_set.warnings],
        "metrics": diagnostics.global_metrics(prediction_set, view=view, n_bins=n_bins,
                                              n_bootstrap=n_bootstrap),
        "metrics_by_subset": {s: diagnostics.global_metrics(prediction_set, view=view,
                                                            n_bins=n_bins, subset=s,
                                                            n_bootstrap=n_bootstrap)
                              for s in subsets},
        "bin_sensitivity": diagnostics.bin_sensitivity(prediction_set, view=view),
        "reliability": diagnostics.reliability(prediction_set, view=view, n_bins=n_bins,
                                               n_bootstrap=n_bootstrap, interval=interval),
        "variables": variables.ranking_for_report(prediction_set),
        "clinical": clinical_section(prediction_set),
        "decision": decision_document(
            prediction_set, np.ones(prediction_set.n_rows, bool), n_bootstrap=n_bootstrap),
        **({"comparison": comparison_document(
            prediction_set, model_probabilities(prediction_set, frame),
            reference=None, n_bootstrap=n_bootstrap, random_state=0, view=view)}
           if len(prediction_set.roles.models) >= 2 else {}),
    }


def build_partitioned_report(uri: str, overrides: RoleOverrides | None = None, *,
                             view: View | None = None, scheduler: str | None = None,
                             n_bins: int = 15, n_bootstrap: int = 200,
                             interval: IntervalMethod = "wilson",
                             negative_rate: float | None = None) -> dict[str, Any]:
    """The exact measures and diagrams of files of any size on Dask.

    ``uri`` is a path, glob or fsspec URL of Parquet (``.parquet``/``.pq``) or CSV files,
    or a folder of them (plain or hive-partitioned).
    Roles not given in ``overrides`` are inferred from the first rows as for an upload.
    ``view`` is that of the measures and diagrams shown first (:func:`partitioned_report`).
    Runs on the scheduler at ``scheduler`` or on a local in-process cluster sized to the
    machine. The weight role (``overrides.weight``, or a column named as a weight column
    is) and ``negative_rate`` weigh the rows, as :func:`build_report` does.
    """
    if view is not None:
        check_summary_view(view, 2)  # before any pass; the classes are checked later
    frame = read_partitioned(uri)
    overrides = overrides or RoleOverrides()
    if overrides.weight is not None and overrides.weight not in frame.columns:
        raise CalibrationInputError(f"--weight: no column named {overrides.weight!r}.",
                                    code="column_not_found", column=overrides.weight)
    roles = partitioned_roles(frame, overrides)
    with dask_client(scheduler) as client:
        report = partitioned_report(frame, roles, view=view, n_bins=n_bins,
                                    n_bootstrap=n_bootstrap, interval=interval,
                                    negative_rate=negative_rate)
        workers = len(client.scheduler_info().get("workers", {}))
    return {"file": uri, "engine": "dask", "scheduler": scheduler or "local (in-process)",
            "workers": workers, **report}


def partitioned_roles(frame: dd.DataFrame, overrides: RoleOverrides) -> ColumnRoles:
    """The roles of a partitioned table: ``overrides``, the rest inferred from its first
    rows as for an upload (features default to every other column)."""
    return apply_overrides(infer_roles(first_rows(frame)), overrides,
                           [str(column) for column in frame.columns])


def partitioned_report(frame: dd.DataFrame, roles: ColumnRoles, *, view: View | None = None,
                       n_bins: int = 15, n_bootstrap: int = 200,
                       progress: Callable[[float, str], None] | None = None,
                       interval: IntervalMethod = "wilson",
                       negative_rate: float | None = None) -> dict[str, Any]:
    """The report's exact parts of ``frame`` on the Dask client in use: the measures with
    intervals on all rows (and on the test rows with a split column), equal-mass ECE,
    the binned and smooth reliability diagrams, and the test of calibration checked in
    a second view, as :func:`build_report` gives them in memory.

    ``view`` ("top_label", or "positive" for two classes) is the one shown first (under
    ``metrics``, ``metrics_by_subset`` and ``reliability``); by default the positive
    view for two classes, top label for more (:func:`calibcore.data.default_view`).
    ``views`` holds the measures and diagrams of every view the summaries serve: both,
    for two classes, from the same passes. ``progress(fraction, message)`` is called as
    the partitions of each pass are done (it may raise to stop; the pass's outstanding
    tasks are then cancelled). ``interval`` is the binned diagrams' per-bin interval
    (Wilson's, or Clopper-Pearson's made from the merged counts).

    ``roles.weight`` (a column of row weights) and ``negative_rate`` (negatives weigh 1 /
    rate) weigh the rows as :func:`build_report` weighs them: the measures, intervals,
    diagrams and test come from weight sums merged from the partitions, with Kish's
    effective n in ``n_eff`` and ``weights_note``, the equal-mass ECE at the weighted
    quantiles, and the variables ranking with equal-weight bins and weighted curves."""
    label, probabilities = roles.label, list(roles.probabilities)
    if label is None:
        raise CalibrationInputError("no label column found; name it (--label, or \"label\" "
                                    "in the request).", code="roles_not_found")
    step = progress or (lambda fraction, message: None)

    def stage(start: float, stop: float, message: str) -> Callable[[float], None] | None:
        """Say ``message`` at ``start``; the progress of a pass that ends at ``stop``."""
        step(start, message)
        if progress is None:
            return None  # passes run as plain dask.compute
        return lambda fraction: step(start * (1.0 - fraction) + stop * fraction, message)

    # the classes, and the views whose scores are too many to gather (their summaries
    # are then not built), in one pass
    classes, crowded = classes_and_crowded_views(
        frame, label, probabilities, progress=stage(0.0, 0.1, "reading the classes"))
    view = view or default_view(len(classes))
    check_summary_view(view, len(classes))
    views: list[View] = ["positive", "top_label"] if len(classes) == 2 else ["top_label"]
    summary, cells, scores = partitioned_summaries(
        frame, label, probabilities, classes, views=views, n_bins=n_bins, progress=stage(
            0.1, 0.45, "summarising every partition (counts and sums per bin, resampling "
                       "cells)"), weight=roles.weight, negative_rate=negative_rate,
        crowded=crowded)
    weighted = summary.weighted
    equal_mass = partitioned_equal_mass(
        frame, label, probabilities, classes, n_bins=n_bins,
        progress=stage(0.45, 0.8, "equal-mass bins: exact quantiles of every score"),
        weight=roles.weight, negative_rate=negative_rate)
    test_summaries = None
    if roles.split is not None:
        names = frame[roles.split].map_partitions(_split_names, meta=(roles.split, object))
        _check_split(roles.split, _split_counts(names, stage(0.8, 0.82,
                                                             "checking the split column")))
        test_summaries = partitioned_summaries(
            frame[names == "test"], label, probabilities, classes, views=views,
            n_bins=n_bins, progress=stage(0.82, 0.85, "summarising the test rows"),
            weight=roles.weight, negative_rate=negative_rate)
    ranking = None
    if roles.features:
        ranking = _partitioned_ranking(frame, roles, classes, stage(
            0.85, 0.95, f"VECE and LOESS curves of {len(roles.features)} variables"),
            negative_rate)
        if weighted:
            ranking = {**ranking, **_summary_weighting(summary)}
    step(0.95, "intervals and the test of calibration")
    subsets = {"all": (summary, cells, scores)}
    if test_summaries is not None:
        subsets["test"] = test_summaries
    tests = {subset: _partitioned_test(parts[2], len(classes), n_bootstrap)
             for subset, parts in subsets.items()}
    by_view = {}
    for shown in views:
        metrics = {subset: {**_partitioned_metrics(*parts, shown, n_bins, n_bootstrap),
                            **tests[subset]} for subset, parts in subsets.items()}
        metrics["all"]["equal_mass"] = {
            **equal_mass["views"][shown], "classwise_ece": equal_mass["classwise_ece"],
            "note": "bins at numpy's quantiles of all the scores, found exactly in two "
                    "passes" + ("; weighted quantiles, weighted sums" if weighted else "")
                    + "; no interval"}
        by_view[shown] = {"metrics_by_subset": metrics,
                          "reliability": _partitioned_reliability(
                              summary, cells, shown, classes, n_bins, n_bootstrap, interval)}
    return {"n_partitions": frame.npartitions, "n_rows": summary.n_rows, "n_bins": n_bins,
            "classes": classes, "view": view,
            "roles": {"label": label, "probabilities": probabilities,
                      "features": list(roles.features), "split": roles.split,
                      "id": roles.id,
                      "models": [[name, list(group)] for name, group in roles.models],
                      "weight": roles.weight},
            "negative_rate": negative_rate,
            **_summary_weighting(summary),
            "metrics": by_view[view]["metrics_by_subset"]["all"],
            "metrics_by_subset": by_view[view]["metrics_by_subset"],
            "reliability": by_view[view]["reliability"], "views": by_view,
            "variables": ranking}


def _summary_weighting(summary: BinnedSummary) -> dict[str, Any]:
    """:func:`app.services.weighting.weighting`'s fields from a merged summary: Kish's
    effective n from its sums of weights and of squared weights."""
    if not summary.weighted:
        return {"weighted": False}
    return {"weighted": True, "n_eff": summary.n_eff,
            "weights_note": weighted_caption(summary.n_eff, summary.n_rows)}


def _partitioned_reliability(summary: BinnedSummary, cells: CellSummary | None, view: View,
                             classes: list[str], n_bins: int, n_bootstrap: int,
                             interval: IntervalMethod = "wilson") -> dict[str, Any]:
    """The binned diagrams of ``view`` and of every class (each bin's ``interval`` made
    from its merged counts), and ``view``'s smooth one."""
    return jsonable({
        "view": view, "n": summary.n_rows, "n_bins": n_bins, "binning": "equal_width",
        "interval": interval, **_summary_weighting(summary),
        "diagrams": [with_interval(d, interval) for d in summary.diagrams(view=view)],
        "classwise": [with_interval(d, interval) for d in summary.diagrams(
            classwise=True, class_names=classes)],
        **({} if cells is None else {"smooth": [cells.smooth_diagram(
            view=view, n_bootstrap=n_bootstrap)]}),
        "note": "binned: exact, per-bin counts and sums merged from the partitions, "
                + ("Wilson" if interval == "wilson" else "Clopper-Pearson")
                + " 95% interval of each bin's observed frequency; " + (
                    "no smooth diagram: too many cells" if cells is None else
                    "smooth: each resampling cell's rows at their mean score "
                    f"(within {CELL_ERROR_BOUND:g} of the curve on the rows in the "
                    "tests), bootstrap 95% band")})


def _partitioned_test(scores: dict[View, ScoreSummary | None], n_classes: int,
                      n_bootstrap: int) -> dict[str, Any]:
    """The test of calibration of the summarized rows as the in-memory report gives it
    (positive view checked in the top-label one for two classes; top label for more),
    or None with ``calibration_test_note`` saying why it was not run; the KS and Kuiper
    tests beside it in each view whose scores were gathered, on the in-memory seeds."""
    if n_bootstrap == 0:
        return {"calibration_test": None}
    checked = calibration_tests_of_scores(scores, n_classes, n_resamples=n_bootstrap,
                                          level=diagnostics.TEST_LEVEL)
    if isinstance(checked, str):
        return {"calibration_test": None, "calibration_test_note": checked}
    views: tuple[View, ...] = ("positive", "top_label") if n_classes == 2 else ("top_label",)
    cumulative = tuple(
        summary.calibration_test(statistic=statistic, n_resamples=n_bootstrap,
                                 random_state=number)
        for number, view in enumerate(views) if (summary := scores.get(view)) is not None
        for statistic in CUMULATIVE_STATISTICS)
    return {"calibration_test": diagnostics.calibration_test_document(checked, cumulative)}


def _partitioned_ranking(frame: dd.DataFrame, roles: ColumnRoles, classes: list[str],
                         progress: Callable[[float], None] | None,
                         negative_rate: float | None = None) -> dict[str, Any]:
    """The variable ranking of every row: VECE exact (equal-mass bins at pandas.qcut's
    edges of all rows, found in two passes), VCE(v*) from LOESS on binned sums (within
    the stated bound); no permutation p-values (they need every row in one place). The
    weight role and ``negative_rate`` weigh the rows (equal-weight bins at the weighted
    quantiles, weighted VECE and curves)."""
    result = partitioned_variables(frame, str(roles.label), list(roles.probabilities),
                                   classes, list(roles.features),
                                   max_categories=variables.MAX_CATEGORIES,
                                   progress=progress, weight=roles.weight,
                                   negative_rate=negative_rate)
    rows = jsonable(result.ranking().to_dict("records"))
    for row in rows:
        row["significant"] = None
    return {"n_bins": result.n_bins, "span": result.span, "n_points": result.n_points,
            "n_permutations": 0, "n": result.n_rows, "min_p_value": None, "subset": "all",
            "variables": rows,
            "note": "VECE exact on every row (equal-mass bins at the quantiles of all rows, "
                    "found exactly in two passes" + ("; weighted: equal-weight bins at the "
                    "weighted quantiles, weighted sums and LOESS windows holding a share of "
                    "the weight" if result.weighted else "")
                    + "); VCE(v*) from LOESS on binned sums, within "
                    f"{result.loess_bound:g} of the curves on the rows; no permutation "
                    "p-values on the dask engine"}


def _partitioned_metrics(summary: BinnedSummary, cells: CellSummary | None,
                         scores: dict[View, ScoreSummary | None], view: View, n_bins: int,
                         n_bootstrap: int) -> dict[str, Any]:
    result = measures_with_intervals(summary, cells, scores[view], view=view,
                                     n_bootstrap=n_bootstrap)
    return {**_summary_weighting(summary), "view": view, "n": result.n, "n_bins": n_bins,
            "n_bootstrap": n_bootstrap, "interval": diagnostics.INTERVAL_NOTE,
            "resampling": result.resampling,
            "note": "values exact, merged from per-partition summaries; " + (
                "intervals resample the merged cells (the in-memory bootstrap's draws, "
                "whatever the partitioning)" if result.resampling.startswith("resampled")
                else result.resampling or "no intervals asked for"),
            "measures": {estimate.key: asdict(estimate) for estimate in result.measures}}


def _check_split(column: str, counts: pd.Series) -> None:
    """Refuse a split column with other values than calibration/test names, or no test
    rows (as an upload would)."""
    unknown = int(counts[counts.index.isna()].sum())
    if unknown:
        raise CalibrationInputError(
            f"column {column!r} (split) has {unknown:,} values that are not calibration "
            "(calibration/cal/fit) or test (test/eval/holdout) names; name the split column "
            "(--split, or \"split\" in the request), or leave it out.", code="invalid_split",
            column=column, count=unknown)
    if "test" not in counts.index:
        raise CalibrationInputError(f"column {column!r} (split) has no test rows.",
                                    code="invalid_split", column=column)


def _split_counts(names: dd.Series, progress: Callable[[float], None] | None) -> pd.Series:
    """Rows per split name, NaN for other values (one pass, ``progress`` per partition)."""
    import dask

    counts = [dask.delayed(pd.Series.value_counts)(part, dropna=False)
              for part in names.to_delayed()]
    (summed,) = compute_reporting([dask.delayed(_summed_counts)(counts)], counts, progress)
    return summed


def _summed_counts(counts: list[pd.Series]) -> pd.Series:
    return pd.concat(counts).groupby(level=0, dropna=False).sum()


def _split_names(values: pd.Series) -> pd.Series:
    """calibration / test (or NaN) for each value of a split column, as uploads read it."""
    return values.map(lambda v: v if pd.isna(v) else str(v).strip().lower()).map(SPLIT_VALUES)
