"""A self-contained HTML rendering of the offline report (``calibdash report --html``)."""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import plotly.graph_objects as go

from app.diagnostics import DIAGNOSTICS
from app.services.datasets import rows_caption
from app.ui.clinical_report import levels_list, quantities_table
from app.ui.figures import bin_sensitivity_figure, reliability_figure, smooth_reliability_figure
from app.ui.figures.clinical import clinical_curve_figure
from app.ui.figures.decision import decision_figure
from app.ui.figures.reliability import models_figure
from app.ui.figures.variables import ranking_figure

_STYLE = """
body { font-family: system-ui, sans-serif; color: #1d2733; max-width: 1100px; margin: 24px auto;
       padding: 0 20px; }
h1 { margin-bottom: 4px; } .muted { color: #5b6775; }
table { border-collapse: collapse; width: 100%; margin: 10px 0 24px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #d9e0e8;
         font-variant-numeric: tabular-nums; }
th { background: #eef2f7; } .ok { color: #2a9d5c; font-weight: 600; }
.test { padding: 10px 14px; border-left: 4px solid #3b6fb6; background: #eaf2fb; }
.test.rejected { border-left-color: #d9661f; background: #fdf3e4; }
"""


def _figure(figure: go.Figure, first: bool) -> str:
    return str(figure.to_html(full_html=False, include_plotlyjs="inline" if first else False,
                              config={"displaylogo": False}))


def _number(value: Any) -> str:
    return "—" if value is None else f"{value:.4f}"


def _measures_table(metrics: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(item['name'])}</td><td>{_number(item['value'])}</td>"
        f"<td>{_number(item['low'])} – {_number(item['high'])}</td>"
        f"<td>{_number(item.get('plug_in'))}</td>"
        f"<td class='ok'>{'consistent' if item['consistent'] else ''}</td>"
        f"<td>{html.escape(item['meaning'])}</td></tr>"
        for item in metrics["measures"].values() if item["value"] is not None)
    return ("<table><tr><th>measure</th><th>estimate</th><th>95% interval</th>"
            f"<th>plug-in</th><th></th><th>meaning</th></tr>{rows}</table>")


def _calibration_test(metrics: dict[str, Any]) -> str:
    """The test of calibration: its one-line summary, statistic and what it tests, with the
    KS and Kuiper tests beside it."""
    test = metrics.get("calibration_test")
    if not test:  # no resampling asked for, or (dask engine) too many distinct scores
        note = metrics.get("calibration_test_note")
        return f"<div class='test'>{html.escape(note)}.</div>" if note else ""
    others = "".join(
        f"Checked in the {html.escape(other['view'].replace('_', '-'))} view: "
        f"p = {other['p_value']:.3f} — {html.escape(other['verdict'])}.<br>"
        for other in test.get("other_views", []))
    cumulative = (f"{html.escape(test['cumulative_summary'])}.<br>"
                  if test.get("cumulative_summary") else "")
    return (f"<div class='test{' rejected' if test['rejected'] else ''}'>"
            f"<strong>{html.escape(test['summary'])}</strong><br>{others}{cumulative}"
            f"<span class='muted'>{html.escape(test['statistic_name'])} = "
            f"{test['statistic']:.4f}; 95% of the resamples drawn from the probabilities "
            f"stay below {test['null_quantile']:.4f}. Resamples — "
            f"{html.escape(test['resampling'])}. {html.escape(test['description'])}</span>"
            "</div>")


def _variables_table(report: dict[str, Any]) -> str:
    ranking = report.get("variables")
    if not ranking:
        return "<p class='muted'>No feature columns: no variable ranking.</p>"
    rows = "".join(
        f"<tr><td>{html.escape(str(v['variable']))}</td><td>{v['kind']}</td>"
        f"<td>{_number(v['vece'])}</td><td>{_number(v['vce_max'])}</td>"
        f"<td>{html.escape(str(v['v_star']))}</td><td>{_number(v['p_value'])}</td>"
        f"<td>{v['n']:,}</td></tr>" for v in ranking["variables"])
    return ("<table><tr><th>variable</th><th>kind</th><th>VECE</th><th>VCE(v*)</th>"
            f"<th>v*</th><th>p-value</th><th>n</th></tr>{rows}</table>"
            f"<p class='muted'>{ranking['n_bins']} equal-mass bins; "
            + (html.escape(ranking["note"]) if ranking.get("note") else
               f"p-values from {ranking['n_permutations']} seeded permutations")
            + ".</p>")


def _comparison(report: dict[str, Any]) -> str:
    """Several models on the same rows: measures, paired differences, diagrams."""
    comparison = report.get("comparison")
    if not comparison:
        return ""
    keys = [k for k in ("nll", "brier", "accuracy", "ece", "smooth_ece")
            if k in comparison["models"][0]["measures"]]
    header = "".join(f"<th>{html.escape(comparison['models'][0]['measures'][k]['name'])}</th>"
                     for k in keys)

    def cell(model: dict[str, Any], key: str) -> str:
        item = model["measures"][key]
        text = f"{_number(item['value'])} [{_number(item['low'])}, {_number(item['high'])}]"
        difference = model["differences"].get(key)
        if difference:
            text += (f"<br><span class='muted'>{difference['value']:+.4f} "
                     f"[{difference['low']:+.4f}, {difference['high']:+.4f}], "
                     f"p = {difference['p_value']:.2g}</span>")
        return f"<td>{text}</td>"

    rows = "".join(f"<tr><td>{html.escape(m['name'])}"
                   f"{' (reference)' if m['name'] == comparison['reference'] else ''}</td>"
                   + "".join(cell(m, k) for k in keys) + "</tr>"
                   for m in comparison["models"])
    return (f"<h2>Models compared on the same rows</h2>{_weights_line(comparison)}"
            f"<table><tr><th>model</th>{header}</tr>"
            f"{rows}</table><p class='muted'>{html.escape(comparison['note'])}; second line: "
            f"difference to {html.escape(comparison['reference'])}.</p>"
            + _figure(models_figure(comparison), False))


def _global_section(report: dict[str, Any]) -> str:
    """The measures with the test of calibration, then the reliability diagrams (the first
    figure carries plotly.js, inlined once)."""
    metrics = report["metrics"]
    figures = [reliability_figure(report["reliability"])]
    if "smooth" in report["reliability"]:  # absent on the dask engine above MAX_CELLS
        figures.append(smooth_reliability_figure(report["reliability"]))
    if "bin_sensitivity" in report:
        figures.append(bin_sensitivity_figure(report["bin_sensitivity"], metrics["n_bins"]))
    plots = "".join(_figure(figure, number == 0) for number, figure in enumerate(figures))
    return f"""<h2>Global measures</h2>
{_weights_line(metrics)}
{_calibration_test(metrics)}
{_measures_table(metrics)}
<p class="muted">n = {metrics['n']:,}. Estimates: {html.escape(metrics['interval'])},
{metrics['n_bootstrap']} resamples ({html.escape(metrics.get('resampling') or 'rows')}).</p>
<h2>Reliability</h2>
{plots}
"""


def _variables_section(report: dict[str, Any]) -> str:
    ranking = report.get("variables")
    ranking_plot = _figure(ranking_figure(ranking), False) if ranking else ""
    return f"""<h2>Variables ranked by VECE</h2>
{_weights_line(ranking or {})}
{ranking_plot}
{_variables_table(report)}
"""


def _weights_line(section: dict[str, Any]) -> str:
    """'Row weights: weighted (Kish n_eff = ...)' or the not-applied note, if any."""
    note = section.get("weights_note")
    return f"<p class='muted'>Row weights: {html.escape(note)}.</p>" if note else ""


def _decision_section(report: dict[str, Any]) -> str:
    """The decision curve and where the model's band is above both simple strategies."""
    decision = report.get("decision")
    if not decision:  # the dask engine's report has none
        return ""
    above = [t for t, beats in zip(decision["thresholds"], decision["beats_both"], strict=True)
             if beats]
    verdict = (f"The model's band lies above treat all and treat none at {len(above)} of "
               f"{len(decision['thresholds'])} thresholds, between {above[0]:.2f} and "
               f"{above[-1]:.2f}." if above else
               "At no threshold is the model's band above both treat all and treat none.")
    return (f"<h2>Decision curve</h2>{_weights_line(decision)}"
            f"{_figure(decision_figure(decision), False)}"
            f"<p>{html.escape(verdict)}</p><p class='muted'>"
            f"{html.escape(' '.join(decision['notes']))}</p>")


def _clinical_section(report: dict[str, Any]) -> str:
    """The clinical calibration report of each problem: verdict, levels, the curve and the
    quantities (absent on the dask engine)."""
    section = report.get("clinical")
    if not section:
        return ""
    parts = ["<h2>Clinical calibration</h2>", _weights_line(section)]
    for problem in section["problems"]:
        parts.append(f"<h3>{html.escape(problem['problem'])}</h3>"
                     f"<div class='test'><strong>{html.escape(problem['verdict'])}</strong>"
                     f"{levels_list(problem)}</div>"
                     + _figure(clinical_curve_figure(problem), False)
                     + quantities_table(problem))
    parts += [f"<p class='muted'>{html.escape(s['target'])}: {html.escape(s['reason'])}</p>"
              for s in section["skipped"]]
    if section.get("note"):
        parts.append(f"<p class='muted'>{html.escape(section['note'])}.</p>")
    return "".join(parts)


#: Each report key of the registry of diagnostics, and how its section is drawn.
SECTIONS: dict[str, Callable[[dict[str, Any]], str]] = {
    "metrics": _global_section, "comparison": _comparison, "clinical": _clinical_section,
    "variables": _variables_section, "decision": _decision_section}


def render_html(report: dict[str, Any]) -> str:
    """The report as one HTML page with interactive figures and no external resources: the
    sections of the diagnostics that have one (:data:`app.diagnostics.DIAGNOSTICS`), in
    their order."""
    metrics = report["metrics"]
    sections = "".join(SECTIONS[d.report](report) for d in DIAGNOSTICS if d.report is not None)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = html.escape(f"calibdash report: {report['file']}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{_STYLE}</style></head><body>
<h1>Calibration report</h1>
<p class="muted">{html.escape(report['file'])} · {html.escape(rows_caption(report))} ·
classes {html.escape(', '.join(report['classes'][:12]))} · {metrics['view'].replace('_', '-')}
view · generated {stamp} by calibdash</p>
{sections}</body></html>
"""
