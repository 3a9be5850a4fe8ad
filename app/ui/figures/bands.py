"""Uncertainty bands drawn only where both of their edges exist.

A ``fill="tonexty"`` pair of traces with gaps (points left out) fills each edge against its
own chord across the gap, so a curve seems to leave its band. :func:`band_outline` gives one
closed outline per stretch of points with both edges, separated by gaps, for one
``fill="toself"`` trace.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def band_outline(x: Sequence[float], low: Sequence[float | None], high: Sequence[float | None],
                 shown: Sequence[bool] | None = None
                 ) -> tuple[list[float | None], list[float | None]]:
    """The outline of the band: up each stretch along ``high`` and back along ``low``.

    A point belongs to a stretch when both edges are finite (and ``shown``, if given).
    """
    lower = np.asarray([np.nan if v is None else v for v in low], dtype=float)
    upper = np.asarray([np.nan if v is None else v for v in high], dtype=float)
    keep = np.isfinite(lower) & np.isfinite(upper)
    if shown is not None:
        keep &= np.asarray(shown, dtype=bool)
    points = [float(v) for v in x]
    outline_x: list[float | None] = []
    outline_y: list[float | None] = []
    edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(int), [0]])))
    for start, stop in zip(edges[::2], edges[1::2], strict=True):
        if outline_x:
            outline_x.append(None)
            outline_y.append(None)
        outline_x += points[start:stop] + points[start:stop][::-1]
        outline_y += upper[start:stop].tolist() + lower[start:stop][::-1].tolist()
    return outline_x, outline_y


def translucent(colour: str, alpha: float = 0.2) -> str:
    """``#rrggbb`` as an ``rgba(...)`` fill colour."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"
