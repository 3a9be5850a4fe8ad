"""Fitted cost models of every job kind (placeholder: the constants measured before)."""

from __future__ import annotations

from app.services.cost import CostModel

COST_MODELS: dict[str, CostModel] = {
    "support": CostModel({"fixed": 0.2, "forest": 2.2e-6}, spread=2.5),
    "heterogeneity": CostModel({"fixed": 1.0, "forests": 0.005, "forest_rows": 3e-7},
                               spread=2.5),
    "recalibration": CostModel({"fixed": 1.0, "methods": 1.0, "forest": 2.2e-6,
                                "hh_forests": 0.005, "hh_forest_rows": 3e-7}, spread=2.5),
    "lce": CostModel({"fixed": 0.5, "embed_rows": 1e-5, "tsne_rows": 5e-3, "umap_rows": 4e-3,
                      "umap_placed_rows": 2e-3, "umap_compile": 60.0, "lce_tree": 1e-8,
                      "lce_pairs": 1e-9}, spread=2.5),
    "subgroups": CostModel({"fixed": 0.5, "slice_rows": 1e-7, "pair_rows": 1e-7}, spread=2.5),
    "variables": CostModel({"fixed": 0.5, "variables": 0.15, "variable_rows": 4e-6},
                           spread=2.5),
    "metrics": CostModel({"fixed": 0.2, "bootstrap_rows": 1e-7}, spread=2.5),
    "external": CostModel({"fixed": 5.0, "parquet_bytes": 1e-7, "csv_bytes": 3e-7},
                          spread=2.5),
}
