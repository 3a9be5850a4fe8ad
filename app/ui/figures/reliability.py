"""Result -> plotly figure. Every figure has a title, axis labels, legend and bands."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.ui.figures.bands import band_outline, translucent

PALETTE = ("#1f5fa8", "#d9661f", "#2a9d5c", "#8c3fb0", "#b8323a", "#6b7a8f")

#: How captions, legends and hover labels name a per-bin interval.
INTERVAL_NAMES = {"wilson": "Wilson", "clopper_pearson": "Clopper-Pearson"}


def interval_name(result: dict[str, Any]) -> str:
    """'Wilson' or 'Clopper-Pearson': the per-bin interval of a reliability result (or of
    one diagram); Wilson's when a stored result does not say."""
    interval = result.get("interval") or "wilson"
    return INTERVAL_NAMES.get(interval, str(interval))


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
    interval = interval_name(diagram)
    error = {"type": "data", "symmetric": False,
             "array": [h - v for h, v in zip(high, y, strict=True)],
             "arrayminus": [v - lo for v, lo in zip(y, low, strict=True)], "color": colour,
             "thickness": 1.2, "width": 3, "visible": show_band}
    return [go.Scatter(
        x=x, y=y, mode="lines+markers", name=name, error_y=error,
        line={"color": colour, "width": 2}, marker={"size": 7, "color": colour},
        customdata=np.column_stack([counts, low, high]) if counts else None,
        hovertemplate="confidence %{x:.3f}<br>observed %{y:.3f} "
                      f"(95% {interval} CI " "%{customdata[1]:.3f}–%{customdata[2]:.3f})<br>"
                      "n = %{customdata[0]}<extra>" + name + "</extra>")]


def _weighted(result: dict[str, Any], separator: str = "<br>") -> str:
    """'weighted (Kish n_eff = ...)' after ``separator`` for a weighted result, else
    nothing."""
    return f"{separator}{result['weights_note']}" if result.get("weighted") else ""


def reliability_figure(result: dict[str, Any], *, title: str | None = None) -> go.Figure:
    """Binned reliability diagram(s) with 95% intervals (Wilson's or Clopper-Pearson's, as
    the result says, named in the caption and the legend), and the score histogram
    beneath (the weight per bin, with row weights)."""
    diagrams = result["diagrams"]
    interval = interval_name(diagrams[0] if diagrams else result)
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.72, 0.28],
                           vertical_spacing=0.06)
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                                line={"color": "#999", "dash": "dash", "width": 1}),
                     row=1, col=1)
    for number, diagram in enumerate(diagrams[:8]):
        colour = PALETTE[number % len(PALETTE)]
        name = (f"{diagram['label']} (bars: 95% {interval})" if len(diagrams) == 1
                else diagram["label"])
        for trace in _diagram_traces(diagram, name, colour):
            figure.add_trace(trace, row=1, col=1)
        edges = diagram["edges"]
        weighted = diagram.get("weight") is not None
        figure.add_trace(go.Bar(
            x=_centres(edges), y=diagram["weight"] if weighted else diagram["count"],
            width=np.diff(edges).tolist(),
            name=f"{'weight' if weighted else 'rows'} per bin ({diagram['label']})",
            marker={"color": colour},
            opacity=0.55 if len(diagrams) > 1 else 0.8, showlegend=len(diagrams) > 1,
            hovertemplate="bin %{x:.3f}<br>%{y:,.4g} " + ("total weight" if weighted
                                                           else "rows")
                          + "<extra></extra>"), row=2, col=1)
    score = "confidence" if result["view"] == "top_label" else "predicted probability"
    outcome = "accuracy" if result["view"] == "top_label" else "observed frequency"
    figure.update_layout(
        title=title or f"Binned reliability diagram<br><sup>{view_name(result['view'])}, "
                       f"n = {result.get('n_binned', result['n']):,}, {result['n_bins']} "
                       f"bins; bars: 95% {interval} intervals{_weighted(result)}</sup>",
        barmode="overlay", legend={"orientation": "h", "y": -0.18},
        margin={"l": 60, "r": 20, "t": 84 if result.get("weighted") else 60, "b": 40},
        template="plotly_white", height=520)
    figure.update_xaxes(range=[0, 1], row=1, col=1)
    figure.update_xaxes(title_text=f"{score} (probability)", range=[0, 1], row=2, col=1)
    figure.update_yaxes(title_text=f"{outcome} (fraction)", range=[0, 1.02], row=1, col=1)
    figure.update_yaxes(title_text="total weight (log scale)" if result.get("weighted")
                        else "rows (log scale)", type="log", dtick=1, row=2, col=1)
    return figure


def comparison_figure(results: list[dict[str, Any]]) -> go.Figure:
    """Held-out reliability before and after each recalibration, on one plot."""
    diagrams = [(results[0]["reliability_before"], "uncalibrated", "#6b7a8f")] if results else []
    diagrams += [(result["reliability_after"], result["name"], PALETTE[number % len(PALETTE)])
                 for number, result in enumerate(results)]
    n = results[0]["n_heldout"] if results else 0
    return overlaid_diagrams_figure(
        diagrams, f"Held-out reliability, before and after<br><sup>top label, n = {n:,}; "
                  "bars: 95% Wilson intervals</sup>", top=60)


def overlaid_diagrams_figure(diagrams: list[tuple[dict[str, Any], str, str]], title: str, *,
                             height: int = 480, top: int = 70,
                             view: str = "top_label") -> go.Figure:
    """Binned diagrams (diagram, name, colour) of one view on one plot beside the
    diagonal."""
    score, outcome = _AXES.get(view, _AXES["positive"])
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                                line={"color": "#999", "dash": "dash", "width": 1}))
    for diagram, name, colour in diagrams:
        for trace in _diagram_traces(diagram, name, colour):
            figure.add_trace(trace)
    figure.update_layout(
        title=title, xaxis={"title": f"{score} (probability)", "range": [0, 1]},
        yaxis={"title": f"{outcome} (fraction)", "range": [0, 1.02]},
        legend={"orientation": "h", "y": -0.2}, template="plotly_white", height=height,
        margin={"l": 60, "r": 20, "t": top, "b": 40})
    return figure


#: Axis titles of a diagram per view: the score and the frequency it predicts.
_AXES = {"top_label": ("confidence", "accuracy"),
         "positive": ("predicted P(class 1)", "observed frequency of class 1")}


def view_name(view: str) -> str:
    """How a figure names a view: "positive-class view", ..."""
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


#: Height added per extra row of a legend below a figure (two entries a row at half width).
_LEGEND_ROW_HEIGHT = 22


def smooth_reliability_figure(result: dict[str, Any]) -> go.Figure:
    """Kernel-smoothed reliability curve(s) with the bootstrap band, density beneath."""
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.72, 0.28],
                           vertical_spacing=0.06)
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                                line={"color": "#999", "dash": "dash", "width": 1}),
                     row=1, col=1)
    diagrams = result["smooth"][:8]
    for number, diagram in enumerate(diagrams):
        colour = PALETTE[number % len(PALETTE)]
        grid, curve, band_x, band_y = _supported(diagram)
        # one legend entry per class (its band and density toggle with it): a legend entry
        # per band as well took so much of the figure that the axis titles overlapped
        group = f"diagram-{number}"
        figure.add_trace(go.Scatter(
            x=band_x, y=band_y,
            fill="toself", fillcolor=translucent(colour), line={"width": 0},
            hoverinfo="skip", name=f"95% bootstrap band ({diagram['label']})",
            legendgroup=group, showlegend=len(diagrams) == 1), row=1, col=1)
        figure.add_trace(go.Scatter(
            x=grid, y=curve, mode="lines", line={"color": colour, "width": 2.5},
            name=f"{diagram['label']} (smooth ECE {diagram['smooth_ece']:.4f})",
            legendgroup=group,
            hovertemplate="score %{x:.3f}<br>smoothed outcome %{y:.3f}<extra></extra>"),
            row=1, col=1)
        figure.add_trace(go.Scatter(
            x=diagram["grid"], y=diagram["density"], mode="lines", fill="tozeroy",
            line={"color": colour, "width": 1}, fillcolor=translucent(colour),
            name=f"density ({diagram['label']})", showlegend=False, legendgroup=group,
            hovertemplate="score %{x:.3f}<br>density %{y:.2f} per unit of probability"
                          "<extra></extra>"), row=2, col=1)
    first = diagrams[0] if diagrams else {"n": 0, "bandwidth": float("nan")}
    score = "confidence" if result["view"] == "top_label" else "predicted probability"
    outcome = "accuracy" if result["view"] == "top_label" else "observed frequency"
    figure.update_layout(
        title=f"Smooth reliability diagram<br><sup>n = {first['n']:,}, bandwidth "
              f"{first['bandwidth']:.3f}; band: 95% bootstrap; shown where there is data"
              + _weighted(result)
              + (f"<br>{result['sample_note']}" if result.get("sample_note") else "")
              + "</sup>",
        legend={"orientation": "h", "y": -0.18}, template="plotly_white",
        height=520 + _LEGEND_ROW_HEIGHT * max(0, len(diagrams) // 2 - 1),
        margin={"l": 60, "r": 20, "b": 40,
                "t": 60 + 24 * (bool(result.get("sample_note")) + bool(result.get("weighted")))})
    figure.update_xaxes(range=[0, 1], row=1, col=1)
    figure.update_xaxes(title_text=f"{score} (probability)", range=[0, 1], row=2, col=1)
    figure.update_yaxes(title_text=f"{outcome} (fraction)", range=[0, 1.02], row=1, col=1)
    # short: the density panel is low, and a longer title ran into the one above
    figure.update_yaxes(title_text="density", row=2, col=1)
    return figure


def bin_sensitivity_figure(result: dict[str, Any], current_bins: int | None = None) -> go.Figure:
    """Binned ECE against the bin count, beside the bin-free consistent measures."""
    figure = go.Figure()
    names = {"equal_width": "binned ECE, equal-width bins",
             "equal_mass": "binned ECE, equal-mass bins"}
    for number, (binning, values) in enumerate(result["ece"].items()):
        figure.add_trace(go.Scatter(
            x=result["n_bins"], y=values, mode="lines+markers", name=names[binning],
            line={"color": PALETTE[number], "width": 2},
            hovertemplate="%{x} bins: ECE %{y:.4f}<extra></extra>"))
    for number, item in enumerate(result["bin_free"].values()):
        figure.add_trace(go.Scatter(
            x=[result["n_bins"][0], result["n_bins"][-1]], y=[item["value"]] * 2, mode="lines",
            name=f"{item['name']} (no bins)", line={"color": PALETTE[2 + number], "dash": "dot",
                                                     "width": 2},
            hovertemplate=f"{item['name']}: {item['value']:.4f}<extra></extra>"))
    if current_bins is not None:
        top = max([max(v) for v in result["ece"].values()] +
                  [item["value"] for item in result["bin_free"].values()])
        figure.add_trace(go.Scatter(
            x=[current_bins, current_bins], y=[0, top], mode="lines",
            name=f"selected: {current_bins} bins", line={"color": "#999", "width": 1},
            hoverinfo="skip"))
    figure.update_layout(
        title=f"Binned ECE depends on the bin count; consistent measures do not "
              f"(n = {result['n']:,}{_weighted(result, '; ')})",
        xaxis={"title": "number of bins", "type": "log"},
        yaxis={"title": "calibration error (probability)", "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.25}, template="plotly_white", height=420,
        margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return figure


def _supported(diagram: dict[str, Any]) -> tuple[list[float], list[float | None],
                                                list[float | None], list[float | None]]:
    """Grid and curve with points of almost no data (fewer than about one row within a
    bandwidth) blanked, since there the kernel estimate only reflects its regularizer; and
    the band's outline over the shown points (:func:`band_outline`)."""
    weight = np.asarray(diagram["density"]) * diagram["n"] * diagram["bandwidth"]
    shown = weight >= 1.0
    grid = list(diagram["grid"])
    curve = [v if keep else None for v, keep in zip(diagram["curve"], shown, strict=True)]
    band_x, band_y = band_outline(grid, diagram["curve_low"], diagram["curve_high"], shown)
    return grid, curve, band_x, band_y


def slice_figure(whole: dict[str, Any], diagram: dict[str, Any], name: str,
                 view: str = "top_label") -> go.Figure:
    """One slice's binned reliability beside the whole data's, on ``view``."""
    return overlaid_diagrams_figure(
        [(whole, f"all rows (n = {sum(whole['count']):,})", "#6b7a8f"),
         (diagram, f"slice (n = {sum(diagram['count']):,})", PALETTE[1])],
        f"Reliability of the slice and of all rows<br><sup>{name}; {view_name(view)}, "
        f"{len(diagram['count'])} equal-width bins; bars: 95% Wilson intervals</sup>",
        height=460, view=view)


def models_figure(result: dict[str, Any]) -> go.Figure:
    """Every model's binned reliability diagram on one plot (the comparison's view; the
    top label when the measures are classwise)."""
    view = result.get("diagram_view", "top_label")
    return overlaid_diagrams_figure(
        [(model["reliability"], model["name"] + (
            " (reference)" if model["name"] == result["reference"] else ""),
          PALETTE[number % len(PALETTE)]) for number, model in enumerate(result["models"])],
        f"Reliability of each model<br><sup>{view_name(view)}, n = {result['n']:,} shared "
        "rows, 15 equal-width bins; bars: 95% Wilson intervals</sup>", view=view)
