"""Result -> plotly figure, one module per topic. Every figure has a title, axis labels
with units, a legend and uncertainty bands where something is estimated."""

from app.ui.figures.reliability import (
    PALETTE,
    bin_sensitivity_figure,
    comparison_figure,
    empty_figure,
    reliability_figure,
    smooth_reliability_figure,
)

__all__ = ["PALETTE", "bin_sensitivity_figure", "comparison_figure", "empty_figure",
           "reliability_figure", "smooth_reliability_figure"]
