"""Decision curves: the model's net benefit with its band, beside treat all and treat none."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from app.ui.figures.bands import band_outline, translucent
from app.ui.figures.reliability import PALETTE

MODEL, ALL, NONE = PALETTE[0], PALETTE[1], "#6b7a8f"


def decision_figure(result: dict[str, Any]) -> go.Figure:
    """Net benefit against the threshold probability: the model (with its bootstrap band),
    treat all and treat none. The y axis stops a little below 0: treat all falls without
    bound as the threshold grows, and only where a curve is above 0 is it worth anything."""
    x = result["thresholds"]
    curves = result["net_benefit"]
    band = result["bands"]["model"]
    traces: list[go.Scatter] = []
    if any(v is not None for v in band["lower"]):
        outline_x, outline_y = band_outline(x, band["lower"], band["upper"])
        traces.append(go.Scatter(
            x=outline_x, y=outline_y, fill="toself", fillcolor=translucent(MODEL),
            line={"width": 0}, mode="lines", hoverinfo="skip", legendgroup="model",
            name=f"model: {result['confidence_level']:.0%} bootstrap band "
                 f"({result['n_bootstrap']} resamples)"))
    traces += [
        go.Scatter(x=x, y=curves["model"], mode="lines", name="model",
                   legendgroup="model", line={"color": MODEL, "width": 2.5},
                   hovertemplate="threshold %{x:.2f}<br>net benefit %{y:.4f}<extra>model"
                                 "</extra>"),
        go.Scatter(x=x, y=curves["treat_all"], mode="lines", name="treat all",
                   line={"color": ALL, "width": 1.8},
                   hovertemplate="threshold %{x:.2f}<br>net benefit %{y:.4f}<extra>treat "
                                 "all</extra>"),
        go.Scatter(x=x, y=curves["treat_none"], mode="lines", name="treat none",
                   line={"color": NONE, "width": 1.8, "dash": "dash"},
                   hovertemplate="threshold %{x:.2f}<extra>treat none</extra>"),
    ]
    figure = go.Figure(traces)
    prevalence = result["prevalence"]
    top = max([prevalence, *(v for v in curves["model"] if v is not None),
               *(v for v in band["upper"] if v is not None)])
    bottom = -max(0.02, 0.4 * top)
    event = result.get("positive_class", "1")
    figure.update_layout(
        title=f"Decision curve: net benefit of acting on P({event})<br><sup>"
              f"n = {result['n']:,} rows ({result.get('subset', 'all')})"
              + (f", weighted: Kish n_eff = {result['n_eff']:,.0f}, weighted prevalence "
                 if result.get("weighted") else ", prevalence ")
              + f"{prevalence:.3f}; a row is treated when P({event}) ≥ threshold "
              "(Vickers & Elkin 2006)</sup>",
        template="plotly_white", height=480, legend={"orientation": "h", "y": -0.2},
        margin={"l": 70, "r": 20, "t": 80, "b": 60},
        xaxis={"title": "threshold probability (P(event) at which one acts)",
               "range": [x[0], x[-1]] if x else None},
        yaxis={"title": "net benefit (true positives per row, net of harms)",
               "range": [bottom, top * 1.08 + 0.005], "zeroline": True})
    return figure
