"""The flexible calibration curve of the clinical report: lowess of the outcome on the
predicted probability with its 95% bands, the diagonal, and the distribution of the
predicted probabilities beneath; as a plotly figure (the page, ``calibdash report``) and
as static SVG (the printable one-page report)."""

from __future__ import annotations

import html
import itertools
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.ui.figures.bands import translucent
from app.ui.figures.reliability import PALETTE

CURVE = PALETTE[0]
SIMULTANEOUS = PALETTE[1]
BARS = "#9aa7b8"


def _title(report: dict[str, Any]) -> str:
    return (f"Flexible calibration curve of {report['problem']}<br><sup>lowess (span 2/3, no "
            f"robustness steps), n = {report['n']:,}, {report['n_events']:,} events; shaded: "
            "pointwise 95% band; dotted: simultaneous 95% band; ICI "
            f"{report['ici']['value']:.4f}"
            + ("; rows unweighted (lowess takes no weights)"
               if "curve" in (report.get("unweighted") or ()) else "") + "</sup>")


def clinical_curve_figure(report: dict[str, Any]) -> go.Figure:
    """The curve with its bands over the diagonal, and a histogram of p beneath."""
    curve = report["curve"]
    x, y = curve["predicted"], curve["observed"]
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.78, 0.22],
                           vertical_spacing=0.05)
    figure.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                                line={"color": "#999", "dash": "dash", "width": 1}),
                     row=1, col=1)
    figure.add_trace(go.Scatter(
        x=[*x, *x[::-1]], y=[*curve["upper"], *curve["lower"][::-1]], fill="toself",
        fillcolor=translucent(CURVE), line={"width": 0}, hoverinfo="skip",
        name="pointwise 95% band"), row=1, col=1)
    simultaneous = curve.get("simultaneous")
    if simultaneous:
        for sign, name in ((1, "simultaneous 95% band"), (-1, None)):
            edge = [min(1.0, max(0.0, v + sign * simultaneous * s))
                    for v, s in zip(y, curve["standard_error"], strict=True)]
            figure.add_trace(go.Scatter(
                x=x, y=edge, mode="lines", line={"color": SIMULTANEOUS, "dash": "dot",
                                                 "width": 1.2},
                name=name or "", showlegend=name is not None, legendgroup="simultaneous",
                hoverinfo="skip"), row=1, col=1)
    figure.add_trace(go.Scatter(
        x=x, y=y, mode="lines", line={"color": CURVE, "width": 2.5}, name="lowess curve",
        hovertemplate="predicted %{x:.3f}<br>observed %{y:.3f}<extra></extra>"), row=1, col=1)
    edges, counts = curve["histogram"]["edges"], curve["histogram"]["counts"]
    figure.add_trace(go.Bar(
        x=[(a + b) / 2 for a, b in itertools.pairwise(edges)], y=counts,
        width=edges[1] - edges[0], marker={"color": BARS}, name="rows per bin",
        hovertemplate="p %{x:.2f}: %{y:,} rows<extra></extra>"), row=2, col=1)
    figure.update_layout(title=_title(report), template="plotly_white", height=600,
                         legend={"orientation": "h", "y": -0.16}, bargap=0,
                         margin={"l": 70, "r": 20, "t": 70, "b": 40})
    figure.update_xaxes(range=[0, 1], row=1, col=1)
    figure.update_xaxes(title_text="predicted probability", range=[0, 1], row=2, col=1)
    figure.update_yaxes(title_text="observed proportion", range=[0, 1.02], row=1, col=1)
    figure.update_yaxes(title_text="rows", rangemode="tozero", row=2, col=1)
    return figure


def clinical_curve_svg(report: dict[str, Any], *, width: int = 520, height: int = 420) -> str:
    """The same figure as static SVG: prints sharply and needs no script."""
    curve = report["curve"]
    left, right, top, bottom, gap, bars = 56, 12, 12, 44, 10, 64
    plot_w = width - left - right
    plot_h = height - top - bottom - gap - bars

    def sx(v: float) -> float:
        return left + v * plot_w

    def sy(v: float) -> float:
        return top + (1.0 - v) * plot_h

    def path(xs: list[float], ys: list[float]) -> str:
        return " ".join(f"{'M' if i == 0 else 'L'}{sx(a):.1f},{sy(b):.1f}"
                        for i, (a, b) in enumerate(zip(xs, ys, strict=True)))

    x, y = curve["predicted"], curve["observed"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="flexible calibration '
             'curve" font-family="sans-serif" font-size="11">']
    for tick in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        parts.append(f'<line x1="{sx(tick):.1f}" y1="{top}" x2="{sx(tick):.1f}" '
                     f'y2="{top + plot_h}" stroke="#e6e9ee"/>'
                     f'<line x1="{left}" y1="{sy(tick):.1f}" x2="{left + plot_w}" '
                     f'y2="{sy(tick):.1f}" stroke="#e6e9ee"/>'
                     f'<text x="{left - 6}" y="{sy(tick) + 4:.1f}" text-anchor="end">'
                     f'{tick:.1f}</text>'
                     f'<text x="{sx(tick):.1f}" y="{height - 26}" text-anchor="middle">'
                     f'{tick:.1f}</text>')
    band = path([*x, *x[::-1]], [*curve["upper"], *curve["lower"][::-1]])
    parts.append(f'<path d="{band} Z" fill="{translucent(CURVE)}" stroke="none"/>')
    parts.append(f'<path d="{path([0, 1], [0, 1])}" stroke="#888" stroke-dasharray="5,4" '
                 'fill="none"/>')
    if curve.get("simultaneous"):
        k = curve["simultaneous"]
        for sign in (1, -1):
            edge = [min(1.0, max(0.0, v + sign * k * s))
                    for v, s in zip(y, curve["standard_error"], strict=True)]
            parts.append(f'<path d="{path(x, edge)}" stroke="{SIMULTANEOUS}" '
                         'stroke-dasharray="2,3" fill="none"/>')
    parts.append(f'<path d="{path(x, y)}" stroke="{CURVE}" stroke-width="2.5" fill="none"/>')
    edges, counts = curve["histogram"]["edges"], curve["histogram"]["counts"]
    tallest = max(counts) or 1
    base = top + plot_h + gap + bars
    for a, b, count in zip(edges[:-1], edges[1:], counts, strict=True):
        h = bars * count / tallest
        parts.append(f'<rect x="{sx(a):.1f}" y="{base - h:.1f}" width="{sx(b) - sx(a):.1f}" '
                     f'height="{h:.1f}" fill="{BARS}"/>')
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" '
                 'fill="none" stroke="#555"/>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle">'
                 'predicted probability</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {top + plot_h / 2})">observed proportion</text>')
    parts.append(f'<text x="{left + plot_w - 4}" y="{base - bars + 10}" fill="#555" '
                 f'text-anchor="end">rows per bin of 0.02 (tallest {tallest:,})</text>')
    legend = [(CURVE, "lowess curve", ""), ("#888", "perfect calibration", "5,4"),
              (SIMULTANEOUS, "simultaneous 95% band", "2,3")]
    for number, (colour, label, dash) in enumerate(legend):
        yy = top + 14 + 15 * number
        parts.append(f'<line x1="{left + 8}" y1="{yy}" x2="{left + 30}" y2="{yy}" '
                     f'stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>'
                     f'<text x="{left + 35}" y="{yy + 4}">{html.escape(label)}</text>')
    yy = top + 14 + 15 * len(legend)
    parts.append(f'<rect x="{left + 8}" y="{yy - 5}" width="22" height="10" '
                 f'fill="{translucent(CURVE)}"/><text x="{left + 35}" y="{yy + 4}">'
                 'pointwise 95% band</text>')
    parts.append("</svg>")
    return "".join(parts)
