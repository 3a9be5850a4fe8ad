"""Variable-based calibration figures (Kelly & Smyth 2023): VECE by variable, curves along
a variable.

``scale`` chooses what the curves show: ``"error"`` (error rate and predicted
error, as in the paper's Figure 1b) or ``"accuracy"`` (accuracy and
confidence, i.e. one minus each; the bands flip with them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import plotly.graph_objects as go
from numpy.typing import NDArray
from plotly.subplots import make_subplots

from app.ui.figures.bands import band_outline, translucent
from app.ui.figures.reliability import PALETTE

Scale = Literal["error", "accuracy"]

#: (observed, predicted) series names per scale, in the top-label view and (binary
#: models) the positive view, whose "error" is 1[y ≠ 1] and predicted error 1 − P(class 1).
_NAMES: dict[str, tuple[str, str]] = {
    "error": ("error rate", "predicted error (1 − confidence)"),
    "accuracy": ("accuracy", "confidence"),
}
_POSITIVE_NAMES: dict[str, tuple[str, str]] = {
    "error": ("frequency of y ≠ class 1", "1 − P(class 1) (predicted)"),
    "accuracy": ("frequency of class 1", "mean P(class 1) (predicted)"),
}


def _names(detail: dict[str, Any], scale: Scale) -> tuple[str, str]:
    return (_POSITIVE_NAMES if detail.get("view") == "positive" else _NAMES)[scale]
#: How each curve range (``calibcore.variable.CURVE_RANGES``) reads in titles and notes.
RANGE_WORDS: dict[str, str] = {
    "5-95": "5th–95th percentile",
    "1-99": "1st–99th percentile",
    "all": "minimum to maximum",
}
_OBSERVED_COLOUR, _PREDICTED_COLOUR = PALETTE[1], PALETTE[0]
#: Most bars drawn in the VECE chart (the table lists every variable).
MAX_BARS = 30
_SIGNIFICANT_COLOUR, _NOT_SIGNIFICANT_COLOUR, _UNTESTED_COLOUR = PALETTE[4], "#9aa7b6", PALETTE[5]
#: Shading of the gaps of V where the curves are not estimated.
_GAP_COLOUR = "rgba(120, 120, 120, 0.14)"
_GAP_NAME = "no rows here: curves not estimated"


def _on_scale(values: list[float | None], scale: Scale) -> NDArray[np.float64]:
    array = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    return array if scale == "error" else 1.0 - array


def _band(low: list[float | None], high: list[float | None],
          scale: Scale) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Band limits on ``scale`` (1 - x swaps low and high), cut to [0, 1].

    Rates and mean probabilities lie in [0, 1], so the part of a band outside
    it holds no possible value; the API returns the bands uncut.
    """
    if scale == "error":
        lower, upper = _on_scale(low, scale), _on_scale(high, scale)
    else:
        lower, upper = _on_scale(high, scale), _on_scale(low, scale)
    return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)


def _weighted(result: dict[str, Any]) -> str:
    """', weighted (Kish n_eff = 1,234)' for a weighted result (after its row count), else
    nothing."""
    if not result.get("weighted"):
        return ""
    return f", weighted (Kish n_eff = {result['n_eff']:,.0f})"


def format_value(value: Any) -> str:
    """A variable's value for labels: whole numbers from 1,000, else 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int | float):
        if 1e3 <= abs(value) < 1e9:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


# -- ranking ------------------------------------------------------------------------------------
def _significance(row: dict[str, Any]) -> tuple[str, str]:
    if row.get("p_value") is None:
        return "p-value not computed", _UNTESTED_COLOUR
    if row["significant"]:
        return "p < 0.05 (permutation test)", _SIGNIFICANT_COLOUR
    return "p ≥ 0.05: consistent with noise", _NOT_SIGNIFICANT_COLOUR


def ranking_figure(ranking: dict[str, Any], selected: str | None = None) -> go.Figure:
    """Horizontal bars of VECE by variable, largest on top, coloured by significance.

    At most :data:`MAX_BARS` variables (the largest VECE) are drawn.
    """
    ranked = [row for row in ranking["variables"] if row["vece"] is not None]
    rows = ranked[:MAX_BARS]
    figure = go.Figure()
    groups: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for row in rows:
        label, colour = _significance(row)
        groups.setdefault(label, (colour, []))[1].append(row)
    for label, (colour, members) in groups.items():
        figure.add_trace(go.Bar(
            x=[row["vece"] for row in members], y=[row["variable"] for row in members],
            orientation="h", name=label, marker={
                "color": colour,
                "line": {"color": [PALETTE[0] if row["variable"] == selected else colour
                                   for row in members],
                         "width": [3 if row["variable"] == selected else 0 for row in members]}},
            customdata=[[row["n"], "—" if row["p_value"] is None else f"{row['p_value']:.3g}",
                         row["kind"]] for row in members],
            hovertemplate="<b>%{y}</b> (%{customdata[2]})<br>VECE %{x:.4f}<br>"
                          "p = %{customdata[1]}<br>n = %{customdata[0]:,}<extra></extra>"))
    order = [row["variable"] for row in rows]
    n_permutations = ranking["n_permutations"]
    test = (f"{n_permutations} permutations" if n_permutations else "no permutation test")
    shown = f"top {len(rows)} of {len(ranked)} variables; " if len(rows) < len(ranked) else ""
    figure.update_layout(
        title={"text": "VECE by variable",
               "subtitle": {"text": f"{shown}n = {ranking['n']:,} {ranking['subset']} rows"
                                    f"{_weighted(ranking)}; {test}"
                                    f"{'<br>' if ranking.get('weighted') else '; '}click a bar "
                                    "to plot the variable"}},
        xaxis={"title": "VECE (mean |error − predicted error| over bins)",
               "rangemode": "tozero"},
        yaxis={"title": "variable", "categoryorder": "array", "categoryarray": order[::-1],
               "automargin": True},
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom",
                "title": {"text": "significance: "}},
        barmode="overlay", template="plotly_white", clickmode="event",
        height=max(340, 170 + 24 * len(rows)),
        margin={"l": 60, "r": 20, "t": 96 if ranking.get("weighted") else 80, "b": 90})
    return figure


# -- one variable ---------------------------------------------------------------------------------
def _band_trace(x: NDArray[np.float64], low: NDArray[np.float64], high: NDArray[np.float64],
                name: str, colour: str) -> go.Scatter:
    """A filled 95% band over the points where the curve is drawn (:func:`band_outline`)."""
    outline_x, outline_y = band_outline(x.tolist(), low.tolist(), high.tolist())
    return go.Scatter(x=outline_x, y=outline_y, mode="lines", line={"width": 0},
                      fill="toself", fillcolor=translucent(colour, 0.2),
                      legendgroup=f"band-{name}", name=f"95% band ({name})", hoverinfo="skip")


def curves_figure(detail: dict[str, Any], scale: Scale = "error") -> go.Figure:
    """Both LOESS curves with bands, v* marked, histogram of v beneath.

    The variable-based calibration plot of Kelly & Smyth 2023, Figure 1b.
    """
    curves = detail["curves"]
    name = detail["variable"]
    observed_name, predicted_name = _names(detail, scale)
    x = np.asarray(curves["x"], dtype=float)
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26],
                           vertical_spacing=0.05)
    series = (
        (observed_name, "error", _OBSERVED_COLOUR),
        (predicted_name, "predicted_error", _PREDICTED_COLOUR),
    )
    for label, key, colour in series:
        low, high = _band(curves[f"{key}_low"], curves[f"{key}_high"], scale)
        figure.add_trace(_band_trace(x, low, high, label, colour), row=1, col=1)
        y = _on_scale(curves[key], scale)
        figure.add_trace(go.Scatter(
            x=x, y=y, mode="lines+markers", name=label,
            line={"color": colour, "width": 2.5},
            # a point drawn alone (e.g. a sentinel value between gaps) has no line: a dot
            marker={"color": colour, "size": _isolated(y) * 7},
            hovertemplate=f"{name} %{{x:.4g}}<br>{label} %{{y:.4f}}<extra></extra>"),
            row=1, col=1)
    edges = np.asarray(curves["histogram_edges"], dtype=float)
    figure.add_trace(go.Bar(
        x=((edges[:-1] + edges[1:]) / 2).tolist(), y=curves["histogram_counts"],
        width=np.diff(edges).tolist(), name=f"rows per {name} bin",
        marker={"color": PALETTE[5]}, opacity=0.6,
        hovertemplate=f"{name} %{{x:.4g}}<br>%{{y:,}} rows<extra></extra>"), row=2, col=1)
    v_star = curves["v_star"]
    if v_star is not None:  # None: no point where both curves are drawn
        figure.add_vline(x=v_star, line={"color": PALETTE[4], "dash": "dash", "width": 1.5},
                         row="all", col=1)
        right_half = v_star > (x[0] + x[-1]) / 2
        figure.add_annotation(
            x=v_star, y=1, xref="x", yref="y domain", yanchor="bottom", showarrow=False,
            xanchor="right" if right_half else "left",
            text=f"v* = {format_value(v_star)}: VCE(v*) = {curves['vce_max']:.4f}",
            font={"color": PALETTE[4], "size": 12}, bgcolor="rgba(255,255,255,0.85)")
    in_gaps = _shade_gaps(figure, x, curves.get("gaps") or [])
    exact = "" if curves["exact"] else "; band statistics approximated for large n"
    uncertain = sum(value is None for value in curves["error"]) - in_gaps
    if uncertain:
        exact += f"; {uncertain} of {x.size} points left out (fit less certain than one row)"
    figure.update_layout(
        title={"text": f"{name}: {observed_name} and {predicted_name.split(' (')[0]} "
                       f"along {name}",
               "subtitle": {"text": f"n = {detail['n']:,} rows{_weighted(detail)}, LOESS span "
                                    f"{curves['span']:.2f}; shaded: 95% pointwise bands{exact}"}},
        legend={"orientation": "h", "y": -0.16}, template="plotly_white", height=580,
        margin={"l": 70, "r": 20, "t": 90, "b": 40}, bargap=0.02, hovermode="x unified")
    figure.update_yaxes(title_text=f"{observed_name.split(' (')[0]} (fraction)", row=1, col=1)
    figure.update_yaxes(title_text="rows (unweighted)" if detail.get("weighted") else "rows",
                        row=2, col=1)
    # integer-aligned histogram bars reach half a unit beyond the curves: show them whole
    figure.update_xaxes(range=[min(x[0], edges[0]), max(x[-1], edges[-1])])
    words = RANGE_WORDS[curves.get("curve_range", "5-95")]
    figure.update_xaxes(title_text=f"{name} (variable units; {words})", row=2, col=1)
    return figure


def _isolated(y: NDArray[np.float64]) -> NDArray[np.int64]:
    """1 where a point is drawn but neither neighbour is, else 0."""
    drawn = np.isfinite(y)
    before = np.concatenate([[False], drawn[:-1]])
    after = np.concatenate([drawn[1:], [False]])
    return (drawn & ~before & ~after).astype(np.int64)


def _shade_gaps(figure: go.Figure, x: NDArray[np.float64], gaps: list[list[float]]) -> int:
    """Shade the gaps of V where the curves are not estimated (no rows, and wider than the
    LOESS windows at their edges reach), with a legend entry and a note; returns how many
    evaluation points they hold."""
    shown = [(max(a, float(x[0])), min(b, float(x[-1]))) for a, b in gaps
             if b > x[0] and a < x[-1]]
    for a, b in shown:
        figure.add_vrect(x0=a, x1=b, fillcolor=_GAP_COLOUR, line_width=0, layer="below",
                         row="all", col=1)
        figure.add_annotation(x=(a + b) / 2, y=0.5, xref="x", yref="y domain",
                              text="no rows here", showarrow=False,
                              font={"color": "#666", "size": 12})
    if shown:
        figure.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name=_GAP_NAME, hoverinfo="skip",
            marker={"symbol": "square", "size": 14, "color": _GAP_COLOUR,
                    "line": {"color": "#999", "width": 1}}), row=1, col=1)
    inside = np.zeros(x.size, dtype=bool)
    for a, b in gaps:
        inside |= (x > a) & (x < b)
    return int(inside.sum())


def categories_figure(detail: dict[str, Any], scale: Scale = "error") -> go.Figure:
    """Grouped bars per category: observed vs predicted, with 95% intervals as error bars."""
    bins = detail["bins"]
    name = detail["variable"]
    labels = [f"{format_value(value)} (n = {count:,})"
              for value, count in zip(bins["bin"], bins["n"], strict=True)]
    observed_name, predicted_name = _names(detail, scale)
    figure = go.Figure()
    series = (
        (observed_name, "error", _OBSERVED_COLOUR, "Wilson"),
        (predicted_name, "predicted_error", _PREDICTED_COLOUR, "t"),
    )
    for label, key, colour, method in series:
        value = _on_scale(bins[key], scale)
        low, high = _band(bins[f"{key}_low"], bins[f"{key}_high"], scale)
        figure.add_trace(go.Bar(
            x=labels, y=value, name=label, marker={"color": colour},
            error_y={"type": "data", "symmetric": False,
                     "array": np.nan_to_num(high - value).tolist(),
                     "arrayminus": np.nan_to_num(value - low).tolist(),
                     "color": "#333", "thickness": 1.2, "width": 5},
            customdata=np.column_stack([low, high]),
            hovertemplate=f"%{{x}}<br>{label} %{{y:.4f}} (95% {method} CI "
                          "%{customdata[0]:.4f}–%{customdata[1]:.4f})<extra></extra>"))
    on_kish = ", on each category's Kish n_eff" if detail.get("weighted") else ""
    figure.update_layout(
        title={"text": f"{name}: {observed_name} and {predicted_name.split(' (')[0]} "
                       "per category",
               "subtitle": {"text": f"n = {detail['n']:,} rows{_weighted(detail)}; error bars: "
                                    f"95% intervals (Wilson for the rate, t for the mean{on_kish})"
                                    }},
        xaxis={"title": f"{name} (category, rows)", "type": "category"},
        yaxis={"title": f"{observed_name.split(' (')[0]} (fraction)", "rangemode": "tozero"},
        barmode="group", legend={"orientation": "h", "y": -0.22}, template="plotly_white",
        height=480, margin={"l": 70, "r": 20, "t": 90, "b": 40})
    return figure


_FIGURES: dict[str, Callable[[dict[str, Any], Scale], go.Figure]] = {
    "numeric": curves_figure,
    "categorical": categories_figure,
}


def variable_figure(detail: dict[str, Any], scale: Scale = "error") -> go.Figure:
    """The calibration plot of one variable: curves (numeric) or grouped bars (categorical)."""
    return _FIGURES[detail["kind"]](detail, scale)
