"""Local calibration results -> plotly figures (Luo et al. 2022): the LCE landscape, the CDF of
the LCE in a confidence bin (its Figure 2) and MLCE / mean LCE against gamma (Figures 1, 16)."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import plotly.graph_objects as go

from app.ui.figures.reliability import PALETTE
from calibcore.local import PLACEMENT_NEIGHBORS

Colour = Literal["lce", "signed"]

_LAYOUT: dict[str, Any] = {"template": "plotly_white",
                           "margin": {"l": 70, "r": 20, "t": 70, "b": 50},
                           "legend": {"orientation": "h", "y": -0.17, "x": 0}}
_GREY = "#6b7a8f"
#: Signed LCE: red where the neighbourhood is over-confident, blue where under-confident.
_DIVERGING = "RdBu_r"
_SEQUENTIAL = "Viridis"
_REDUCER_NAMES = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP", "none": "encoded features",
                  "columns": "embedding columns"}
#: 95% simultaneous band of an empirical CDF (Dvoretzky-Kiefer-Wolfowitz-Massart).
_DKW_LEVEL = 0.05


def bin_label(bin_summary: dict[str, Any]) -> str:
    """``(0.933, 1.000]``: a confidence bin's edges (right-closed, the first also closed)."""
    opening = "[" if bin_summary["index"] == 0 else "("
    return f"{opening}{bin_summary['lower']:.3f}, {bin_summary['upper']:.3f}]"


def axis_titles(result: dict[str, Any]) -> tuple[str, str]:
    """Axis titles of the 2-D map, with units, from how the map was made."""
    embedding = result["embedding"]
    reducer = embedding["reducer"]
    dimension = int(embedding["dimension"])
    if reducer == "columns" and dimension <= 2:
        columns = embedding["columns"]
        second = columns[1] if dimension == 2 else "(zero axis)"
        return f"{columns[0]} (column units)", f"{second} (column units)"
    if dimension > 2 and reducer != "pca":
        name = _REDUCER_NAMES[reducer]
        return (f"map axis 1 (PCA(2) of the {dimension}-D {name} space)", "map axis 2")
    units = {"pca": "SD units", "none": "SD units", "columns": "column units",
             "tsne": "arbitrary units", "umap": "arbitrary units"}[reducer]
    prefix = {"pca": "principal component", "tsne": "t-SNE", "umap": "UMAP",
              "none": "encoded feature", "columns": "embedding"}[reducer]
    if reducer == "none" and dimension <= 2:
        columns = embedding["columns"]
        return f"{columns[0]} (SD units)", (f"{columns[1]} (SD units)" if dimension == 2
                                            else "(zero axis)")
    return f"{prefix} 1 ({units})", f"{prefix} 2 ({units})"


def landscape_figure(result: dict[str, Any], colour: Colour = "lce") -> go.Figure:
    """The rows on the 2-D map coloured by (signed) LCE; WebGL, largest errors drawn on top."""
    rows = result["rows"]
    signed = colour == "signed"
    values = np.asarray(rows["signed_lce" if signed else "lce"], dtype=float)
    customdata = list(zip(rows["row"], [v if v is not None else "—" for v in rows["id"]],
                          rows["label"], rows["prediction"], rows["confidence"], rows["lce"],
                          rows["signed_lce"], [b + 1 for b in rows["bin_index"]], strict=True))
    if signed:
        limit = float(np.abs(values).max()) if values.size else 1.0
        scale: dict[str, Any] = {"colorscale": _DIVERGING, "cmid": 0.0, "cmin": -limit,
                                 "cmax": limit}
        bar_title = "signed LCE<br>(+ over-, − under-<br>confident)"
    else:
        scale = {"colorscale": _SEQUENTIAL, "cmin": 0.0,
                 "cmax": float(values.max()) if values.size else 1.0}
        bar_title = "LCE<br>(probability)"
    drawn = (f"seeded sample of {rows['n_shown']:,} of {rows['n_selected']:,} rows"
             if rows["sampled"] else f"{rows['n_shown']:,} rows")
    figure = go.Figure(go.Scattergl(
        x=rows["x"], y=rows["y"], mode="markers", customdata=customdata,
        name=f"rows ({drawn}), colour: {'signed LCE' if signed else 'LCE'}",
        marker={"color": values, "size": _marker_size(len(values)), "opacity": 0.85,
                "colorbar": {"title": {"text": bar_title}, "thickness": 14, "len": 0.8},
                **scale},
        hovertemplate="id %{customdata[1]} (row %{customdata[0]})<br>label %{customdata[2]}, "
                      "predicted %{customdata[3]}<br>confidence %{customdata[4]:.3f} (bin "
                      "%{customdata[7]})<br>LCE %{customdata[5]:.4f}<br>signed LCE "
                      "%{customdata[6]:+.4f}<extra></extra>"))
    worst = result["worst_row"]
    if rows["bin"] is None or rows["bin"] == worst["bin"]:
        figure.add_trace(go.Scattergl(
            x=[worst["x"]], y=[worst["y"]], mode="markers",
            name=f"largest LCE (MLCE {worst['lce']:.3f})",
            marker={"symbol": "star", "size": 16, "color": "#ffffff",
                    "line": {"color": "#111111", "width": 1.5}},
            hovertemplate=f"MLCE {worst['lce']:.4f} at row {worst['row']}<extra></extra>"))
    where = ("all confidence bins" if rows["bin"] is None
             else f"confidence bin {rows['bin'] + 1} {bin_label(result['bins'][rows['bin']])}")
    params = result["params"]
    x_title, y_title = axis_titles(result)
    figure.update_layout(
        title=f"LCE landscape, {where} (n = {rows['n_selected']:,} rows)<br><sup>"
              f"{_REDUCER_NAMES[params['reducer']]} map{_fitted_words(result)}, "
              f"γ = {params['gamma']:g}, {params['n_bins']} bins{_weighted_words(result)} · "
              "drag a box to list rows</sup>",
        xaxis={"title": x_title}, yaxis={"title": y_title}, height=560, dragmode="select",
        uirevision=f"{params['reducer']}-{params['subset']}", **_LAYOUT)
    return figure


#: How rows outside the reducer's sample got map positions, in a figure subtitle.
_PLACED_BY = {
    "transform": "the reducer's transform",
    "graph": "UMAP's membership-weighted neighbours",
    "neighbors": f"the mean map position of their {PLACEMENT_NEIGHBORS} nearest sample rows",
}


def _fitted_words(result: dict[str, Any]) -> str:
    """" fitted on 20,000 of 300,000 rows, the rest placed by ..." when sampled, else ""."""
    about = result.get("embedding") or {}
    placement = about.get("placement", "all")
    if placement == "all" or "fitted_rows" not in about:
        return ""
    return (f" fitted on {about['fitted_rows']:,} of {result['n_rows']:,} rows, the rest "
            f"placed by {_PLACED_BY.get(placement, placement)}")


def _weighted_words(result: dict[str, Any]) -> str:
    """', weighted (Kish n_eff = ... of ... rows)' for a weighted result, else ''."""
    return f", {result['weights_note']}" if result.get("weighted") else ""


def _marker_size(n_points: int) -> float:
    return float(np.clip(9 - 1.2 * math.log10(max(n_points, 1)), 3, 7))


def lce_cdf_figure(result: dict[str, Any], bin_index: int | None) -> go.Figure:
    """Empirical CDF of the LCE in one bin (or all rows), with a 95% band, the bin's
    |conf - acc| (what binned ECE sees there) and the bin's mean LCE."""
    if bin_index is None:
        cdf, gap_value, gap_name = result["cdf"], result["ece"], "ECE (γ → ∞ limit of the mean)"
        mean_value, where = result["mean_lce"], "all confidence bins"
    else:
        summary = result["bins"][bin_index]
        cdf, gap_value = summary["cdf"], summary["gap"]
        gap_name = "the bin's |conf − acc|"
        mean_value = summary["mean_lce"]
        where = f"confidence bin {bin_index + 1} {bin_label(summary)}"
    n_rows = int(cdf["n"])
    # weighted: the CDF of the weight, its band on Kish's n_eff (the DKW bound's n)
    n_eff = cdf.get("n_eff")
    of = "rows" if n_eff is None else "the weight"
    figure = go.Figure()
    if n_rows and (n_eff is None or n_eff > 0):
        x = np.concatenate([[0.0], cdf["lce"]])
        y = np.concatenate([[0.0], cdf["cumulative"]])
        epsilon = math.sqrt(math.log(2 / _DKW_LEVEL) / (2 * (n_rows if n_eff is None
                                                             else n_eff)))
        figure.add_trace(go.Scatter(
            x=np.concatenate([x, x[::-1]]),
            y=np.concatenate([np.minimum(y + epsilon, 1), np.maximum(y - epsilon, 0)[::-1]]),
            fill="toself", fillcolor="rgba(31, 95, 168, 0.15)", line={"width": 0, "shape": "hv"},
            name="95% band (DKW)", hoverinfo="skip"))
        figure.add_trace(go.Scatter(
            x=x, y=y, mode="lines", line={"color": PALETTE[0], "width": 2.2, "shape": "hv"},
            name=f"fraction of {of} with LCE ≤ x",
            hovertemplate=f"LCE ≤ %{{x:.4f}}: %{{y:.1%}} of {of}<extra></extra>"))
        for value, name, colour, dash in ((gap_value, gap_name, PALETTE[1], "dash"),
                                          (mean_value, "mean LCE", PALETTE[2], "dot")):
            if value is None:
                continue
            figure.add_trace(go.Scatter(
                x=[value, value], y=[0, 1], mode="lines", name=f"{name} = {value:.4f}",
                line={"color": colour, "width": 2, "dash": dash},
                hovertemplate=f"{name} {value:.4f}<extra></extra>"))
    figure.update_layout(
        title=(f"CDF of the LCE, {where} (n = {n_rows:,})<br><sup>rows whose neighbourhood "
               "error is at most x; band: 95% simultaneous</sup>" if n_eff is None else
               f"CDF of the LCE, {where} (n = {n_rows:,})<br><sup>weighted: share of the "
               f"weight with LCE ≤ x; 95% band on Kish n_eff = {n_eff:,.0f}</sup>"),
        xaxis={"title": "LCE (probability)", "rangemode": "tozero"},
        yaxis={"title": f"fraction of {of}", "range": [0, 1.02]}, height=560, **_LAYOUT)
    return figure


def mlce_curve_figure(curve: dict[str, Any], current: dict[str, Any] | None = None) -> go.Figure:
    """MLCE and mean LCE against gamma (log scale), with their gamma -> infinity limits
    (MCE and ECE) and the landscape's current gamma."""
    gammas = curve["gammas"]
    span = [gammas[0], gammas[-1]]
    figure = go.Figure()
    lines = (("mlce", "MLCE (max over rows)", "mce", "MCE (γ → ∞ limit of MLCE)", PALETTE[1]),
             ("mean_lce", "mean LCE", "ece", "ECE (γ → ∞ limit of mean LCE)", PALETTE[0]))
    for key, name, limit_key, limit_name, colour in lines:
        figure.add_trace(go.Scatter(
            x=gammas, y=curve[key], mode="lines+markers", name=name,
            line={"color": colour, "width": 2.2}, marker={"size": 5},
            hovertemplate=f"γ = %{{x:.3g}}<br>{name} %{{y:.4f}}<extra></extra>"))
        figure.add_trace(go.Scatter(
            x=span, y=[curve[limit_key]] * 2, mode="lines",
            name=f"{limit_name} = {curve[limit_key]:.4f}",
            line={"color": colour, "width": 1.5, "dash": "dash"}, hoverinfo="skip"))
    if current is not None:
        figure.add_trace(go.Scatter(
            x=[current["gamma"]] * 2, y=[current["mlce"], current["mean_lce"]],
            mode="markers+lines", name=f"landscape's γ = {current['gamma']:g}",
            line={"color": _GREY, "width": 1, "dash": "dot"},
            marker={"size": 10, "symbol": "diamond", "color": _GREY},
            hovertemplate="γ = %{x:.3g}: %{y:.4f}<extra></extra>"))
    figure.update_layout(
        title=f"MLCE and mean LCE against γ (n = {curve['n_rows']:,} rows, d = "
              f"{curve['dimension']})<br><sup>small γ: individual rows; large γ: the global "
              f"MCE / ECE (dashed). Exact on these rows{_weighted_words(curve)}.</sup>",
        xaxis={"title": "kernel bandwidth γ (log scale)", "type": "log"},
        yaxis={"title": "LCE (probability)", "rangemode": "tozero"}, height=460, **_LAYOUT)
    return figure
