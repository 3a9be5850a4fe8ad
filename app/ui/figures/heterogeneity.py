"""Hidden heterogeneity and calibration support results -> plotly figures
(Wagstaff & Dietterich 2023)."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from app.ui.figures.reliability import PALETTE

_HH_AXIS = "HH (Brier score, summed over classes)"
_LAYOUT: dict[str, Any] = {"template": "plotly_white", "height": 480,
                           "margin": {"l": 70, "r": 20, "t": 100, "b": 50},
                           "legend": {"orientation": "h", "y": -0.16}}
#: Height of plotly's modebar (px): titles start below it, so it never covers them.
_MODEBAR_HEIGHT = 34


def _title(text: str) -> dict[str, Any]:
    """A title pinned to the top of the figure, below the modebar (the margin holds both)."""
    return {"text": text, "yref": "container", "y": 1.0, "yanchor": "top",
            "pad": {"t": _MODEBAR_HEIGHT}}
#: Above this many points a scatter is drawn with WebGL.
WEBGL_POINTS = 5_000


def _scatter_class(n_points: int) -> type[go.Scatter] | type[go.Scattergl]:
    return go.Scattergl if n_points > WEBGL_POINTS else go.Scatter


def _rows(result: dict[str, Any]) -> str:
    """'n = 40 test rows', with ', weighted: Kish n_eff = 34' for a weighted result."""
    rows = f"n = {result['n_evaluated']:,} test rows"
    return f"{rows}, weighted: Kish n_eff = {result['n_eff']:,.0f}" if result.get("weighted") \
        else rows


def hh_map_figure(result: dict[str, Any]) -> go.Figure:
    """Evaluated rows on the 2-D map, coloured by HH; other rows in grey for context."""
    rows = result["rows"]
    background = result["map"]["background"]
    figure = go.Figure()
    if background["x"]:
        figure.add_trace(go.Scattergl(
            x=background["x"], y=background["y"], mode="markers",
            name=f"rows not evaluated ({background['n_other']:,}; "
                 f"{len(background['x']):,} drawn)",
            marker={"color": "#c9d1db", "size": 4}, hoverinfo="skip"))
    # without an id column the ids are None: the row number is then all there is to say
    ids = ["" if v is None else f" (id {v})" for v in rows["id"]]
    customdata = np.column_stack([rows["row"], rows["n_neighbours"], rows["confidence"], ids])
    figure.add_trace(go.Scattergl(
        x=rows["x"], y=rows["y"], mode="markers", name="evaluated rows (colour: HH)",
        marker={"color": rows["hh"], "colorscale": "Viridis", "cmin": 0, "size": 7,
                "line": {"width": 0.4, "color": "#333"},
                "colorbar": {"title": {"text": "HH"}, "thickness": 14}},
        customdata=customdata,
        hovertemplate="HH %{marker.color:.4f}<br>row %{customdata[0]}%{customdata[3]}"
                      "<br>neighbours %{customdata[1]}<br>confidence %{customdata[2]:.3f}"
                      "<extra></extra>"))
    figure.update_layout(
        title=_title(f"HH on the 2-D map ({_rows(result)})<br><sup>"
                     f"{'weighted ' if result.get('weighted') else ''}mean HH "
                     f"{result['mean_hh']:.4f}; grey: rows not evaluated</sup>"),
        xaxis={"title": "map axis 1 (PCA of standardized features, SD units)"},
        yaxis={"title": "map axis 2 (SD units)"}, **_LAYOUT)
    return figure


def hh_confidence_figure(result: dict[str, Any]) -> go.Figure:
    """HH of each evaluated row against its confidence, with binned means and 95% intervals."""
    rows, bins = result["rows"], result["by_confidence"]
    figure = go.Figure()
    figure.add_trace(_scatter_class(len(rows["hh"]))(
        x=rows["confidence"], y=rows["hh"], mode="markers", name="evaluated rows",
        marker={"color": PALETTE[0], "size": 5, "opacity": 0.45},
        hovertemplate="confidence %{x:.3f}<br>HH %{y:.4f}<extra></extra>"))
    figure.add_trace(go.Scatter(
        x=bins["confidence"] + bins["confidence"][::-1], y=bins["high"] + bins["low"][::-1],
        fill="toself", fillcolor="rgba(217, 102, 31, 0.18)", line={"width": 0},
        name="95% interval of the mean", hoverinfo="skip"))
    figure.add_trace(go.Scatter(
        x=bins["confidence"], y=bins["mean"], mode="lines+markers",
        name="mean HH (equal-mass confidence bins)",
        line={"color": PALETTE[1], "width": 2.5}, customdata=bins["n"],
        hovertemplate="confidence %{x:.3f}<br>mean HH %{y:.4f} (n = %{customdata})"
                      "<extra></extra>"))
    figure.update_layout(
        title=_title(f"HH against confidence ({_rows(result)})<br>"
                     f"<sup>line: {'weighted ' if result.get('weighted') else ''}mean HH per "
                     "equal-mass confidence bin, band: its 95% interval</sup>"),
        xaxis={"title": "confidence (top-label probability)"},
        yaxis={"title": _HH_AXIS, "rangemode": "tozero"}, **_LAYOUT)
    return figure


def support_histogram_figure(result: dict[str, Any]) -> go.Figure:
    """Share of rows per support bin: calibration rows as bars, test rows and batch as steps."""
    histogram = result["histogram"]
    edges = np.asarray(histogram["edges"], dtype=float)
    centres, widths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    batch = result.get("batch") or {}
    labels = {"calibration": "calibration rows (cross-fitted)", "test": "test rows",
              "batch": f"batch: {batch.get('name', batch.get('dataset_id', ''))}"}
    figure = go.Figure()
    for part, colour in (("calibration", PALETTE[0]), ("test", PALETTE[2]),
                         ("batch", PALETTE[1])):
        shares = histogram.get(part)
        if not shares:
            continue
        share = np.asarray(shares["share"])
        error = {"type": "data", "symmetric": False, "thickness": 1, "width": 2,
                 "array": (np.asarray(shares["share_high"]) - share).tolist(),
                 "arrayminus": (share - np.asarray(shares["share_low"])).tolist(),
                 "color": colour}
        name = f"{labels[part]} (n = {shares['n']:,}, median {shares['median']:.1f})"
        hover = "support %{x:.1f}<br>share %{y:.3f} (%{customdata} rows)<extra></extra>"
        if part == "calibration":
            figure.add_trace(go.Bar(x=centres, y=share, width=widths, name=name, opacity=0.45,
                                    marker={"color": colour}, error_y=error,
                                    customdata=shares["count"], hovertemplate=hover))
        else:
            figure.add_trace(go.Scatter(x=centres, y=share, mode="lines+markers", name=name,
                                        line={"color": colour, "shape": "hvh", "width": 2},
                                        marker={"size": 5}, error_y=error,
                                        customdata=shares["count"], hovertemplate=hover))
    n_total = sum(histogram[p]["n"] for p in ("calibration", "test", "batch")
                  if histogram.get(p))
    figure.update_layout(
        title=_title(f"Calibration support (n = {n_total:,} rows)<br><sup>share of each "
                     "set's rows per bin, with 95% Wilson intervals; test and batch rows "
                     "scored like the cross-fitted calibration rows</sup>"),
        bargap=0.02,
        xaxis={"title": "calibration support S (expected calibration rows sharing a leaf)",
               "rangemode": "tozero"},
        yaxis={"title": "share of rows per bin (fraction)", "rangemode": "tozero"},
        **_LAYOUT)
    return figure
