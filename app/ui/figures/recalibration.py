"""Recalibration comparison figures: overlaid held-out reliability, paired NLL changes."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from app.ui.figures.reliability import PALETTE

_UNCALIBRATED_COLOUR = "#4a4a4a"
_DASHES = ("solid", "dash", "dot", "dashdot")


def _style(number: int) -> tuple[str, str]:
    """Colour and dash of the number-th method (colours first, then dashes)."""
    return PALETTE[number % len(PALETTE)], _DASHES[(number // len(PALETTE)) % len(_DASHES)]


def _reliability_trace(diagram: dict[str, Any], name: str, colour: str, dash: str,
                       offset: float, axes: tuple[str, str]) -> go.Scatter:
    """Observed frequency per non-empty bin at its mean score, 95% Wilson bars."""
    filled = [i for i, count in enumerate(diagram["count"]) if count > 0]
    x = np.asarray([diagram["mean_score"][i] for i in filled], dtype=float)
    y = np.asarray([diagram["observed"][i] for i in filled], dtype=float)
    low = np.asarray([diagram["observed_low"][i] for i in filled], dtype=float)
    high = np.asarray([diagram["observed_high"][i] for i in filled], dtype=float)
    counts = [diagram["count"][i] for i in filled]
    score, outcome = axes
    return go.Scatter(
        # A small horizontal offset per method keeps overlapping error bars readable.
        x=x + offset, y=y, mode="lines+markers", name=name, legendgroup=name,
        line={"color": colour, "width": 2, "dash": dash}, marker={"size": 6, "color": colour},
        error_y={"type": "data", "symmetric": False, "array": (high - y).tolist(),
                 "arrayminus": (y - low).tolist(), "color": colour, "thickness": 1.1,
                 "width": 2},
        customdata=np.column_stack([counts, low, high, x]) if counts else None,
        hovertemplate=f"{score} %{{customdata[3]:.3f}}<br>{outcome} %{{y:.3f}} "
                      "(95% CI %{customdata[1]:.3f}–%{customdata[2]:.3f})<br>"
                      "n = %{customdata[0]}<extra>" + name + "</extra>")


#: The held-out diagrams a comparison has: the top-label view always, the positive-class
#: view of binary data (``positive_reliability``).
COMPARISON_VIEWS = {"top_label": "reliability", "positive": "positive_reliability"}


def comparison_views(comparison: dict[str, Any]) -> list[str]:
    """The views the comparison's overlaid diagram can be drawn in."""
    return [view for view, key in COMPARISON_VIEWS.items() if comparison.get(key)]


def overlaid_reliability_figure(comparison: dict[str, Any],
                                view: str = "top_label") -> go.Figure:
    """Held-out reliability of the uncalibrated probabilities and of every method, overlaid.

    ``view`` is ``top_label`` (confidence against accuracy) or, for binary data,
    ``positive`` (the predicted probability of the second class against its frequency).
    """
    if view not in comparison_views(comparison):
        view = "top_label"
    entries = comparison[COMPARISON_VIEWS[view]]
    positive = comparison.get("positive_class") or "the positive class"
    if view == "positive":
        axes = (f"P(y = {positive})", f"frequency of y = {positive}")
        what, low_end = f"positive class {positive}", 0.0
    else:
        axes, what, low_end = ("confidence", "accuracy"), "top label", _lowest_confidence(entries)
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                                line={"color": "#999", "dash": "dash", "width": 1},
                                hoverinfo="skip"))
    shown = shown_methods(comparison)
    spread = 0.004
    for number, entry in enumerate(entries):
        colour, dash = ((_UNCALIBRATED_COLOUR, "solid") if number == 0
                        else _style(number - 1))
        offset = (number - (len(entries) - 1) / 2) * spread
        trace = _reliability_trace(entry["diagram"], entry["name"], colour, dash, offset, axes)
        if number and entry["id"] not in shown:
            trace.visible = "legendonly"  # on demand: a click on its legend entry
        figure.add_trace(trace)
    hidden = len(entries) - 1 - len(shown)
    figure.update_layout(
        title=f"Held-out reliability ({what}, n = {comparison['n']:,} rows; bars: 95% "
              "Wilson CI)<br><sup>" + (
                  f"the uncalibrated and the best two by held-out NLL are drawn; click the "
                  f"legend for the other {hidden}" if hidden else
                  "click a legend entry to hide it") + "</sup>",
        xaxis={"title": f"{axes[0]} (predicted probability)", "range": [low_end, 1.01]},
        yaxis={"title": f"{axes[1]} (observed fraction)", "range": [0, 1.02]},
        legend={"orientation": "h", "y": -0.2, "yanchor": "top"}, template="plotly_white",
        height=560, margin={"l": 60, "r": 20, "t": 60, "b": 60})
    return figure


#: Methods drawn at first in the overlaid diagram when there are more than
#: :data:`ALL_SHOWN_UP_TO` (the rest on demand).
SHOWN_METHODS = 2
ALL_SHOWN_UP_TO = 3


def shown_methods(comparison: dict[str, Any]) -> set[str]:
    """Ids of the methods drawn at first: all of a few, else the best :data:`SHOWN_METHODS`
    by held-out NLL (with many methods the curves tangle); the others are a legend click
    away."""
    scored = [(row["values"]["nll"]["value"], row["id"]) for row in comparison.get("rows", [])
              if row.get("method") is not None and row["values"].get("nll", {}).get("value")
              is not None]
    chosen = sorted(scored) if len(scored) <= ALL_SHOWN_UP_TO else sorted(scored)[
        :SHOWN_METHODS]
    return {row_id for _, row_id in chosen}


def _lowest_confidence(entries: list[dict[str, Any]]) -> float:
    """Left end of the confidence axis: top-label confidence is at least 1/K, so a binary
    problem's diagram starts near 0.5; leave a margin and round down to a tenth."""
    scores = [score for entry in entries
              for score, count in zip(entry["diagram"]["mean_score"], entry["diagram"]["count"],
                                      strict=True) if count > 0 and score is not None]
    return max(0.0, np.floor(10 * min(scores, default=0.0)) / 10 - 0.05)


def nll_difference_figure(comparison: dict[str, Any]) -> go.Figure:
    """Paired held-out NLL change of every method against the uncalibrated probabilities."""
    differences = comparison["recommendation"].get("differences", [])
    names = [entry["name"] for entry in differences]
    estimate = np.asarray([entry["nll_minus_uncalibrated"][0] for entry in differences])
    low = np.asarray([entry["nll_minus_uncalibrated"][1] for entry in differences])
    high = np.asarray([entry["nll_minus_uncalibrated"][2] for entry in differences])
    colours = [PALETTE[2] if h < 0 else (PALETTE[4] if lo > 0 else "#9aa7b6")
               for lo, h in zip(low, high, strict=True)]
    figure = go.Figure(go.Scatter(
        x=estimate, y=names, mode="markers", name="NLL change (paired 95% CI)",
        showlegend=False,
        marker={"size": 10, "color": colours},
        error_x={"type": "data", "symmetric": False, "array": (high - estimate).tolist(),
                 "arrayminus": (estimate - low).tolist(), "color": "#5b6775", "thickness": 1.5},
        customdata=np.column_stack([low, high]) if names else None,
        hovertemplate="%{y}: %{x:+.4g} nats/row (95% CI %{customdata[0]:+.4g} to "
                      "%{customdata[1]:+.4g})<extra></extra>"))
    figure.add_vline(x=0, line={"color": "#999", "dash": "dash", "width": 1})
    figure.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="better (CI below 0)",
                                marker={"color": PALETTE[2], "size": 10}))
    figure.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="worse (CI above 0)",
                                marker={"color": PALETTE[4], "size": 10}))
    figure.add_trace(go.Scatter(x=[None], y=[None], mode="markers",
                                name="cannot tell (CI includes 0)",
                                marker={"color": "#9aa7b6", "size": 10}))
    figure.update_layout(
        title=f"Held-out NLL change against uncalibrated (n = {comparison['n']:,} rows, "
              f"paired bootstrap 95% CI, {comparison['n_bootstrap']} resamples)",
        xaxis={"title": "NLL(method) − NLL(uncalibrated) (nats per row; < 0 is better)",
               "zeroline": False},
        yaxis={"title": "method", "autorange": "reversed", "automargin": True},
        legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"},
        template="plotly_white", height=max(300, 150 + 34 * len(names)),
        margin={"l": 60, "r": 20, "t": 90, "b": 50})
    return figure
