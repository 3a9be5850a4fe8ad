"""What each diagnostic needs from a dataset, and warnings when an upload falls unmet.

A 1-row, 2-row or single-class file is a valid table, and the global measures
run on it, but several diagnostics refuse it or answer with numbers that mean
little. The dataset summary's ``warnings`` say so at upload, naming each
diagnostic and how many rows (or classes) it needs, instead of leaving the user
to meet the refusals one page at a time. The minimums are the ones the services
enforce (``too_few_rows`` and ``single_class`` errors); the tests hold them to it.
"""

from __future__ import annotations

import numpy as np

from calibcore.data import PredictionSet

#: (diagnostic, fewest rows it runs on), the checks of the services that run them.
ROW_NEEDS: tuple[tuple[str, int], ...] = (
    ("LCE", 2),                               # local_embedding.choose_rows
    ("hidden heterogeneity", 4),              # heterogeneity: a seeded half split
    ("LOESS curves of the variables", 5),     # floor(n * span 0.8) >= 4 neighbours
    ("t-SNE/UMAP maps", 10),                  # calibcore.local._manifold.MIN_MANIFOLD_ROWS
)
#: Calibration rows for the 5-fold cross-fitted calibration support.
SUPPORT_ROWS = 5
#: Rows to cross-fit a recalibrator (2 x 5 folds) when there is no split column;
#: also what LECE/LECD's 10-fold choice of their parameters needs in calibration rows.
RECALIBRATION_ROWS = 10
#: Below this, bootstrap resamples repeat a handful of rows: intervals understate the
#: uncertainty, and the smooth ECE's kernel spans most of the data.
INTERVAL_ROWS = 30


def sample_size_warnings(prediction_set: PredictionSet) -> list[str]:
    """Warnings for too few rows, or a single class, naming what each diagnostic needs.

    One warning for the rows (each diagnostic that cannot run, with the rows it needs
    in parentheses) and one for the classes.
    """
    if not prediction_set.labelled:
        return []  # a batch for the support comparison: it is never fitted on
    has_split = prediction_set.split is not None
    calibration = prediction_set.mask("calibration")
    n_rows, n_calibration = prediction_set.n_rows, int(calibration.sum())
    unmet = [f"{what} ({rows} rows)" for what, rows in ROW_NEEDS if n_rows < rows]
    if n_calibration < SUPPORT_ROWS:
        unmet.append(f"calibration support ({SUPPORT_ROWS} calibration rows)")
    if n_calibration < RECALIBRATION_ROWS:
        unmet.append(f"LECE and LECD choosing their parameters ({RECALIBRATION_ROWS} "
                     "calibration rows)" if has_split else
                     f"recalibration with cross-fitting ({RECALIBRATION_ROWS} rows)")
    parts = [f"too few for {', '.join(unmet)}"] if unmet else []
    if n_rows < INTERVAL_ROWS:
        parts.append(f"bootstrap intervals and the smooth ECE mean little below "
                     f"{INTERVAL_ROWS} rows")
    warnings = []
    if parts:
        rows = f"only {n_rows:,} row{'s' * (n_rows != 1)}" + (
            f" ({n_calibration:,} for calibration)" if has_split else "")
        warnings.append(f"{rows}: {'; '.join(parts)}.")
    warnings.extend(_class_warnings(prediction_set, calibration, has_split))
    return warnings


def _class_warnings(prediction_set: PredictionSet, calibration: np.ndarray,
                    has_split: bool) -> list[str]:
    classes = prediction_set.classes
    # the classes present, by a count of each class's rows (a million labels: 3 ms, where
    # np.unique hashed them in 20)
    present = np.flatnonzero(np.bincount(prediction_set.y_true, minlength=len(classes)))
    if present.size == 1:
        return [f"every row has the label {classes[present[0]]!r}: recalibration and "
                "calibration support need rows of at least two classes; the global measures "
                "still run."]
    if not has_split:
        return []
    in_calibration = np.flatnonzero(np.bincount(prediction_set.y_true[calibration],
                                                minlength=len(classes)))
    if in_calibration.size == 1:
        return [f"every calibration row has the label {classes[in_calibration[0]]!r}: "
                "recalibration and calibration support fit on the calibration rows and need "
                "at least two classes there."]
    return []
