"""Local calibration of a stored dataset: LCE landscapes and MLCE curves (Luo et al. 2022).

Two jobs share one representation phi of the chosen rows (features -> encoding
-> reducer, :func:`calibcore.local.embed`):

* the *landscape* (:func:`start_landscape`): per-row signed and absolute LCE at
  one bandwidth gamma, per-bin summaries with the CDF of the LCE, and the rows
  on the 2-D map for display;
* the *curve* (:func:`start_curve`): MLCE and mean LCE over a log grid of gamma,
  with the MCE and ECE as their gamma -> infinity limits.

Caching. The embedding is cached on its own (:mod:`app.services.local_embedding`),
so changing gamma or the bins reuses it; the per-row signed LCE is cached
per (representation, gamma, bins) (``<dataset_id>.lce.<hash>``, Parquet) and the
curve per (representation, gammas, bins) (``<dataset_id>.lce-curve.<hash>``, JSON).
Everything else (summaries, CDFs, the rows to draw) is rebuilt from those in
well under a second, by :func:`landscape_result`, which the UI also calls to
redraw one bin. Identical requests running at once compute once (a lock per key).

Row weights. On a weighted dataset the LCE is the weighted Nadaraya-Watson mean (the
kernel weights times the row weights, :mod:`calibcore.local.lce`): the summaries, the
bins' gaps, the CDFs and the MCE/ECE limits are weighted and the result carries Kish's
n_eff (:func:`app.services.weighting.weighting`); the representation phi is fitted on
the rows unweighted. The weights are part of the dataset, so the caches key on nothing
new; :data:`LCE_CACHE_VERSION` marks the cached LCEs computed before weights were applied.

Display decimation. A scatter of hundreds of thousands of points is slow to
send and draw and no more informative, so ``rows`` (the points for the map)
holds at most ``max_points`` rows (default :data:`MAX_DISPLAY_POINTS`): a seeded
uniform sample of the rows of the selected bin (or of all bins), which keeps the
map's density honest; ``max_points=None`` sends every row. The per-row values are
always saved in full as the row columns ``lce`` and ``lce_signed`` (NaN outside
the chosen subset), for downloads with ``?columns=lce,lce_signed``. Rows are sent
in increasing |LCE| so the largest errors are drawn on top.
"""

from app.services.local_curve import CurveParams, estimate_curve, start_curve
from app.services.local_embedding import PREPARING_UMAP, RepresentationParams, start_warm_up
from app.services.local_landscape import (
    CDF_POINTS,
    DEFAULT_GAMMA_FEATURES,
    DEFAULT_GAMMA_MAP,
    MAX_DISPLAY_POINTS,
    LandscapeParams,
    default_gamma,
    estimate_landscape,
    landscape_result,
    start_landscape,
)
from app.services.local_lce import LCE_CACHE_VERSION, lce_terms, phi_dimension

__all__ = ["CDF_POINTS", "DEFAULT_GAMMA_FEATURES", "DEFAULT_GAMMA_MAP", "LCE_CACHE_VERSION",
           "MAX_DISPLAY_POINTS", "PREPARING_UMAP", "CurveParams", "LandscapeParams",
           "RepresentationParams", "default_gamma", "estimate_curve", "estimate_landscape",
           "landscape_result", "lce_terms", "phi_dimension", "start_curve", "start_landscape",
           "start_warm_up"]
