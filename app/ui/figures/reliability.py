"""Result -> plotly figure. Every figure has a title, axis labels, legend and bands."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

PALETTE = ("#1f5fa8", "#d9661f", "#2a9d5c", "#8c3fb0", "#b8323a", "#6b7a8f")


def _centres(edges: list[float]) -> list[float]:
    array = np.asarray(edges, dtype=float)
    return ((array[:-1] + array[1:]) / 2).tolist()


def _diagram_traces(diagram: dict[str, Any], name: str, colour: str,
                    show_band: bool = True) -> list[go.Scatter]:
    """Observed rate per bin at its mean confidence, with the 95% interval as error bars."""
    filled = [i for i, c in enumerate(diagram["count"]) if c > 0]
    x = [diagram["mean_score"][i] for i in filled]
    y = [diagram["observed"][i] for i in filled]
    low = [diagram["observed_low"][i] for i in filled]
    high = [diagram["observed_high"][i] for i in filled]
    counts = [diagram["count"][i] for i in filled]
    error = {"type": "data", "symmetric": False,
             "array": [h - v for h, v in zip(high, y, strict=True)],
             "arrayminus": [v - lo for v, lo in zip(y, low, strict=True)], "color": colour,
             "thickness": 1.2, "width": 3, "visible": show_band}
    return [go.Scatter(
        x=x, y=y, mode="lines+markers", name=name, error_y=error,
        line={"color": colour, "width": 2}, marker={"size": 7, "color": colour},
        customdata=np.column_stack([counts, low, high]) if counts else None,
        hovertemplate="confidence %{x:.3f}<br>observed %{y:.3f} "
                      "(95% CI %{customdata[1]:.3f}–%{customdata[2]:.3f})<br>"
                      "n = %{customdata[0]}<extra>" + name + "</extra>")]


def reliability_figure(result: dict[str, Any], *, title: str | None = None) -> go.Figure:
    """Binned reliability diagram(s) with 95% intervals, and the score histogram beneath."""
    diagrams = result["diagrams"]
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.72, 0.28],
                           vertical_spacing=0.06)
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                                line={"color": "#999", "dash": "dash", "width": 1}),
                     row=1, col=1)
    for number, diagram in enumerate(diagrams[:8]):
        colour = PALETTE[number % len(PALETTE)]
        for trace in _diagram_traces(diagram, diagram["label"], colour):
            figure.add_trace(trace, row=1, col=1)
        edges = diagram["edges"]
        figure.add_trace(go.Bar(
            x=_centres(edges), y=diagram["count"], width=np.diff(edges).tolist(),
            name=f"rows per bin ({diagram['label']})", marker={"color": colour},
            opacity=0.55 if len(diagrams) > 1 else 0.8, showlegend=len(diagrams) > 1,
            hovertemplate="bin %{x:.3f}<br>%{y} rows<extra></extra>"), row=2, col=1)
    score = "confidence" if result["view"] == "top_label" else "predicted probability"
    outcome = "accuracy" if result["view"] == "top_label" else "observed frequency"
    figure.update_layout(
        title=title or f"Reliability diagram ({_view_name(result['view'])}, "
                       f"n = {result['n']:,}, {result['n_bins']} bins; bars: 95% Wilson CI)",
        barmode="overlay", legend={"orientation": "h", "y": -0.18},
        margin={"l": 60, "r": 20, "t": 60, "b": 40}, template="plotly_white", height=520)
    figure.update_xaxes(range=[0, 1], row=1, col=1)
    figure.update_xaxes(title_text=f"{score} (probability)", range=[0, 1], row=2, col=1)
    figure.update_yaxes(title_text=f"{outcome} (fraction)", range=[0, 1.02], row=1, col=1)
    figure.update_yaxes(title_text="rows (log scale)", type="log", row=2, col=1)
    return figure


def comparison_figure(results: list[dict[str, Any]]) -> go.Figure:
    """Held-out reliability before and after each recalibration, on one plot."""
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                                line={"color": "#999", "dash": "dash", "width": 1}))
    if results:
        for trace in _diagram_traces(results[0]["reliability_before"], "uncalibrated", "#6b7a8f"):
            figure.add_trace(trace)
    for number, result in enumerate(results):
        colour = PALETTE[number % len(PALETTE)]
        for trace in _diagram_traces(result["reliability_after"], result["name"], colour):
            figure.add_trace(trace)
    n = results[0]["n_heldout"] if results else 0
    figure.update_layout(
        title=f"Held-out reliability, before and after (top label, n = {n:,}; "
              "bars: 95% Wilson CI)",
        xaxis={"title": "confidence (probability)", "range": [0, 1]},
        yaxis={"title": "accuracy (fraction)", "range": [0, 1.02]},
        legend={"orientation": "h", "y": -0.2}, template="plotly_white", height=480,
        margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return figure


def _view_name(view: str) -> str:
    return {"top_label": "top-label view", "positive": "positive-class view",
            "classwise": "classwise view"}.get(view, view)


def empty_figure(message: str) -> go.Figure:
    """A blank figure carrying a message (used before data is chosen)."""
    figure = go.Figure()
    figure.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper",
                          yref="paper", font={"size": 15, "color": "#666"})
    figure.update_layout(template="plotly_white", xaxis={"visible": False},
                         yaxis={"visible": False}, height=320)
    return figure
