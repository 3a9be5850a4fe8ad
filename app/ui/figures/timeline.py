"""Calibration over time: one figure read top to bottom (calibration error, observed
frequency against mean predicted probability, rows), windows whose calibration changed
shaded red."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.ui.figures.bands import translucent
from app.ui.figures.reliability import PALETTE, view_name

FLAG = "rgba(200, 40, 40, 0.12)"


def _band(x: list[str], low: list[float | None], high: list[float | None], colour: str,
          name: str) -> list[go.Scatter]:
    return [go.Scatter(x=x, y=high, mode="lines", line={"width": 0}, showlegend=False,
                       hoverinfo="skip", legendgroup=name),
            go.Scatter(x=x, y=low, mode="lines", line={"width": 0}, fill="tonexty",
                       fillcolor=translucent(colour), name=f"95% interval ({name})",
                       hoverinfo="skip", legendgroup=name)]


#: What the middle panel draws per view: the observed frequency and the mean score.
_RATES = {"top_label": ("accuracy", "mean confidence"),
          "positive": ("frequency of class 1", "mean P(class 1)")}


def timeline_figure(result: dict[str, Any]) -> go.Figure:
    windows = result["windows"]
    view = result.get("view", "top_label")
    observed, predicted = _RATES[view]
    x = [_short(w["label"], result["period"]) for w in windows]
    figure = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                           row_heights=[0.45, 0.35, 0.2])
    smooth, ece, accuracy, confidence = PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[3]
    for trace in _band(x, [w["smooth_ece_low"] for w in windows],
                       [w["smooth_ece_high"] for w in windows], smooth, "smooth ECE"):
        figure.add_trace(trace, row=1, col=1)
    figure.add_trace(go.Scatter(x=x, y=[w["smooth_ece"] for w in windows],
                                mode="lines+markers", name="smooth ECE",
                                line={"color": smooth, "width": 2.5}), row=1, col=1)
    figure.add_trace(go.Scatter(
        x=x, y=[w["ece"] for w in windows], mode="markers", name="ECE (15 bins)",
        marker={"color": ece, "size": 6},
        error_y={"type": "data", "symmetric": False, "color": ece, "thickness": 1,
                 "array": [_minus(w["ece_high"], w["ece"]) for w in windows],
                 "arrayminus": [_minus(w["ece"], w["ece_low"]) for w in windows]}),
        row=1, col=1)
    for trace in _band(x, [w["observed_rate_low"] for w in windows],
                       [w["observed_rate_high"] for w in windows], accuracy, observed):
        figure.add_trace(trace, row=2, col=1)
    figure.add_trace(go.Scatter(x=x, y=[w["observed_rate"] for w in windows],
                                mode="lines+markers", name=observed,
                                line={"color": accuracy, "width": 2}), row=2, col=1)
    figure.add_trace(go.Scatter(x=x, y=[w["mean_score"] for w in windows],
                                mode="lines+markers", name=predicted,
                                line={"color": confidence, "width": 2, "dash": "dot"}),
                     row=2, col=1)
    figure.add_trace(go.Bar(x=x, y=[w["n"] for w in windows], name="rows",
                            marker={"color": "#9aa7b8"}, showlegend=False), row=3, col=1)
    if result.get("weighted"):  # beside the rows, what they are worth: Kish's n_eff
        figure.add_trace(go.Scatter(x=x, y=[w.get("n_eff") for w in windows],
                                    mode="markers", name="n_eff (Kish)",
                                    marker={"color": "#1d2733", "symbol": "diamond"}),
                         row=3, col=1)
    flagged = [_short(w["label"], result["period"]) for w in windows if w["flagged"]]
    for label in flagged:
        figure.add_vrect(x0=x.index(label) - 0.5, x1=x.index(label) + 0.5, fillcolor=FLAG,
                         line_width=0, layer="below")
    reference = x[result["reference"]] if windows else ""
    headline = (f"{len(flagged)} of {len(windows) - 1} windows changed against {reference} "
                "(shaded)" if flagged else f"no window changed against {reference}")
    figure.update_layout(
        title=f"Calibration over time: {headline}<br><sup>per {result['period']}, "
              f"{view_name(view)}; ECE bands and bars: 95% bootstrap intervals, frequency: "
              "95% Wilson; change test: Welch's t test of the gap, Holm-adjusted</sup>",
        template="plotly_white", height=640, legend={"orientation": "h", "y": -0.12},
        margin={"l": 70, "r": 20, "t": 80, "b": 60}, bargap=0.15)
    figure.update_yaxes(title_text="calibration error", rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title_text="fraction", row=2, col=1)
    figure.update_yaxes(title_text="rows", rangemode="tozero", row=3, col=1)
    figure.update_xaxes(type="category")  # dates as labels: plotly would read them as time
    figure.update_xaxes(title_text=f"{result['time']} ({result['period']}"
                                   f"{', first day' if result['period'] == 'week' else ''})",
                        row=3, col=1)
    return figure


def rolling_figure(result: dict[str, Any]) -> go.Figure:
    """NLL of each window before and after the recalibrator fitted on the window before."""
    rolling = result["rolling"]
    labels = [_short(result["windows"][r["window"]]["label"], result["period"])
              for r in rolling["windows"]]
    figure = go.Figure([
        go.Scatter(x=labels, y=[r["nll_before"] for r in rolling["windows"]],
                   mode="lines+markers", name="uncalibrated", line={"color": "#6b7a8f"}),
        go.Scatter(x=labels, y=[r["nll_after"] for r in rolling["windows"]],
                   mode="lines+markers", name=f"{rolling['method']}, fitted on the window "
                                              "before", line={"color": PALETTE[1]})])
    figure.update_layout(
        title=f"Recalibrated on last period, scored on this one<br><sup>{rolling['note']}"
              "</sup>", template="plotly_white", height=360,
        xaxis={"title": f"{result['time']} ({result['period']})", "type": "category"},
        yaxis={"title": "NLL (nats per row)"}, legend={"orientation": "h", "y": -0.3},
        margin={"l": 70, "r": 20, "t": 70, "b": 40})
    return figure


def _short(label: str, period: str) -> str:
    """A week by its first day (pandas names it ``2026-03-02/2026-03-08``)."""
    return label.split("/")[0] if period == "week" else label


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b
