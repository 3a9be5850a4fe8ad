"""Fitted cost models of every job kind: seconds per unit of each counted term.

Written by ``python -m benchmarks.fit_costs`` on 2026-11-28 from the measured runs
in ``benchmarks/cost_runs.csv`` (2 cores; the load average of each run is kept
there); do not edit by hand: refit.
"""

from __future__ import annotations

#: job kind -> (seconds per unit of each term, spread: the largest factor between
#: a measured run and the fit); :class:`app.services.cost.CostModel` reads it.
COST_MODELS: dict[str, tuple[dict[str, float], float]] = {
    # 6 runs, load average 0.6-0.9
    "external": ({
        "columns": 0.1128,
        "fixed": 1.106,
        "parquet_bytes": 1.251e-06,
    }, 1.54),
    # 6 runs, load average 1.7-4.0
    "heterogeneity": ({
        "fixed": 0,
        "forest_rows": 4.724e-08,
        "forest_rows_features": 4.98e-09,
        "forests": 0,
        "rows": 6.305e-05,
    }, 2.03),
    # 19 runs, load average 18.2-35.7
    "lce": ({
        "embed_cells": 7.115e-07,
        "embed_rows": 1.276e-07,
        "fixed": 0.05384,
        "lce_pairs": 1.774e-09,
        "lce_tree": 2.569e-09,
        "tsne_fits": 22.71,
        "tsne_rows": 0,
        "umap_compile": 13.89,
        "umap_fits": 1.544,
        "umap_rows": 0.0004373,
    }, 3.71),
    # 6 runs, load average 0.8-0.8
    "metrics": ({
        "bootstrap_rows": 1.36e-07,
        "fixed": 0.2067,
        "rows": 0,
    }, 1.22),
    # 70 runs, load average 1.1-2.0
    "recalibration": ({
        "class_rows": 8.426e-07,
        "compare_rows": 3.749e-09,
        "fixed": 0.0732,
        "forest": 3.266e-06,
        "lece_pairs": 9.749e-09,
        "lece_rows": 5.553e-06,
        "lece_weighted_rows": 1.691e-05,
        "lore_pairs": 1.658e-09,
        "lore_rows": 3.568e-09,
        "method_cells": 4.705e-07,
        "method_rows": 0,
        "methods": 0.1287,
        "swc_hh_forest_rows": 6.826e-08,
        "swc_hh_forest_rows_features": 4.232e-09,
        "swc_hh_forests": 8.789e-05,
        "swc_hh_rows": 0.000292,
    }, 3.05),
    # 5 runs, load average 19.7-29.3
    "subgroups": ({
        "fixed": 0.1308,
        "pair_rows": 3.019e-09,
        "rows": 1.599e-06,
        "slice_rows": 0,
    }, 1.40),
    # 5 runs, load average 22.0-30.2
    "support": ({
        "fixed": 0,
        "forest": 1.49e-06,
        "rows": 3.51e-05,
    }, 1.46),
    # 7 runs, load average 0.7-0.8
    "variables": ({
        "fixed": 0.02421,
        "rows": 0,
        "shuffled_rows": 1.664e-06,
        "variable_rows": 1.902e-07,
        "variables": 0.003563,
        "weighted_variable_rows": 1.451e-06,
    }, 1.32),
}
