"""The clinical calibration report as one printable HTML page, to attach to a paper.

In the spirit of the TRIPOD statement's items on performance (Collins et al. 2015): what
was validated and on which rows, every calibration quantity with its 95% interval and the
method behind it, the flexible calibration curve, and the level of the calibration
hierarchy (Van Calster et al. 2016) in words. Self-contained (inline CSS and SVG, no
script) and laid out for one A4 or Letter page when printed to PDF from the browser.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

from app.ui.figures.clinical import clinical_curve_svg

#: Row label of each quantity, in the order of the table.
LABELS = {
    "oe_ratio": "Observed : expected (O:E)",
    "calibration_in_the_large": "Calibration-in-the-large",
    "calibration_intercept": "Calibration intercept",
    "calibration_slope": "Calibration slope",
    "spiegelhalter_z": "Spiegelhalter's z",
    "spiegelhalter_p": "Spiegelhalter's p",
    "ici": "ICI (Eavg)",
    "e50": "E50",
    "e90": "E90",
    "emax": "Emax",
}
#: Perfect calibration's value of each quantity (for the table's last column).
IDEAL = {"oe_ratio": "1", "calibration_in_the_large": "0", "calibration_intercept": "0",
         "calibration_slope": "1", "spiegelhalter_z": "0", "ici": "0", "e50": "0",
         "e90": "0", "emax": "0"}

_STYLE = """
* { box-sizing: border-box; }
body { font: 12px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2733;
       max-width: 820px; margin: 16px auto; padding: 0 16px; }
h1 { font-size: 18px; margin: 0 0 2px; } h2 { font-size: 13px; margin: 12px 0 4px; }
.muted { color: #5b6775; } .small { font-size: 10.5px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #d9e0e8;
         vertical-align: top; font-variant-numeric: tabular-nums; }
th { background: #eef2f7; }
.grid { display: grid; grid-template-columns: 520px 1fr; gap: 12px; align-items: start; }
.verdict { padding: 6px 10px; border-left: 4px solid #3b6fb6; background: #eaf2fb; }
.met { color: #2a7a4b; font-weight: 600; } .unmet { color: #b5541a; font-weight: 600; }
ul { margin: 4px 0; padding-left: 18px; }
@page { size: auto; margin: 10mm; }
@media print {
  body { margin: 0; max-width: none; font-size: 8.5px; line-height: 1.3; }
  h1 { font-size: 15px; } h2 { font-size: 10.5px; margin: 6px 0 2px; }
  .small { font-size: 8px; } th, td { padding: 1px 4px; }
  .grid { grid-template-columns: 50% 1fr; }
  svg { width: 100%; height: auto; }
  table, .grid, .verdict { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
"""


def number(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if value != 0 and abs(value) < 10 ** -digits:
        return f"{value:.2e}"
    return f"{value:.{digits}f}"


def quantity_rows(report: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(label, estimate, 95% interval, perfect value, method) of each quantity."""
    rows = []
    unweighted = set(report.get("unweighted") or ())
    for key, label in LABELS.items():
        estimate = report[key]
        if key in unweighted:  # lowess takes no weights: said beside the number
            label += " (rows unweighted)"
        interval = (f"{number(estimate['lower'])} to {number(estimate['upper'])}"
                    if estimate.get("lower") is not None else "")
        digits = 4 if key in ("ici", "e50", "e90", "emax") else 3
        rows.append((label, number(estimate["value"], digits), interval, IDEAL.get(key, ""),
                     report["conventions"][key]))
    hl = report["hosmer_lemeshow"]
    rows.append(("Hosmer-Lemeshow χ²", f"{number(hl['value'], 2)} (df {hl['df']}, "
                 f"p = {number(hl['p_value'])})", "", "", report["conventions"]["hosmer_lemeshow"]))
    return rows


def quantities_table(report: dict[str, Any], *, methods: bool = True) -> str:
    """The quantities as an HTML table (the one-page report, ``calibdash report``)."""
    head = ("<tr><th>quantity</th><th>estimate</th><th>95% CI</th><th>perfect</th>"
            + ("<th>method</th>" if methods else "") + "</tr>")
    body = "".join(
        f"<tr><td>{html.escape(label)}</td><td>{html.escape(value)}</td>"
        f"<td>{html.escape(interval)}</td><td>{ideal}</td>"
        + (f"<td class='small'>{html.escape(method)}</td>" if methods else "") + "</tr>"
        for label, value, interval, ideal, method in quantity_rows(report))
    return f"<table>{head}{body}</table>"


def levels_list(report: dict[str, Any]) -> str:
    """The hierarchy's levels, each met or not, with the reason."""
    items = "".join(
        f"<li><span class='{'met' if level['met'] else 'unmet'}'>{level['name'].title()} "
        f"calibration: {'consistent' if level['met'] else 'not consistent'}</span> — "
        f"{html.escape(level['reason'])}.</li>" for level in report["levels"])
    return f"<ul>{items}</ul>"


def render_clinical_html(report: dict[str, Any]) -> str:
    """The report as one self-contained, printable HTML page."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = f"Calibration of {report['problem']}"
    subset = "all rows" if report["subset"] == "all" else f"the {report['subset']} rows"
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in report["notes"])
    total = report.get("total_weight") or report["n"]
    events = report.get("events_weight") or report["n_events"]
    weighted = (f" Rows weighted: {html.escape(report['weights_note'])}; weighted events "
                f"{events / total:.1%}." if report.get("weights_note") else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(title)}</h1>
<p class="muted">Dataset <strong>{html.escape(str(report['name']))}</strong>
({html.escape(report['rows'])}); validated on {subset}: n = {report['n']:,},
{report['n_events']:,} events ({report['n_events'] / report['n']:.1%}), mean predicted risk
{events / total / report['oe_ratio']['value']:.1%}{' (weighted)' if weighted else ''}.{weighted}
Generated {stamp} by calibdash.</p>
<p class="verdict"><strong>{html.escape(report['verdict'])}</strong></p>
<div class="grid"><div>{clinical_curve_svg(report)}</div>
<div><h2>Calibration hierarchy (Van Calster et al. 2016)</h2>{levels_list(report)}</div></div>
<h2>Calibration measures</h2>
{quantities_table(report)}
<h2>Methods</h2>
<p class="small">Predicted probabilities {html.escape(report['problem'])} against the observed
outcome. The logistic recalibration fits (Cox 1958) leave out rows with p exactly 0 or 1
({report['n'] - report['n_logistic']:,} here). Intercept, slope, Spiegelhalter's z and p,
Eavg, E90 and Emax are computed as R's <code>rms::val.prob</code> computes them (Harrell),
calibration-in-the-large as <code>glm(y ~ 1, offset = qlogis(p), family = binomial)</code>;
the curve is <code>lowess(p, y, iter = 0)</code>; the moderate level is judged on the
curve's simultaneous 95% band between the 1st and 99th percentiles of p.</p>
{f'<h2>Notes</h2><ul class="small">{notes}</ul>' if notes else ''}
<p class="small muted">References: Van Calster B et al. (2016) A calibration hierarchy for
risk models was defined: from utopia to empirical data. J Clin Epidemiol 74:167–176 ·
Van Calster B et al. (2019) Calibration: the Achilles heel of predictive analytics. BMC Med
17:230 · Austin PC, Steyerberg EW (2019) The Integrated Calibration Index (ICI) and related
metrics for quantifying the calibration of logistic regression models. Stat Med
38:4051–4065 · Spiegelhalter DJ (1986) Probabilistic prediction in patient management and
clinical trials. Stat Med 5:421–433 · Hosmer DW, Lemeshow S (1980) Goodness of fit tests for
the multiple logistic regression model. Commun Stat Theory Methods 9:1043–1069 · Harrell FE,
rms: Regression Modeling Strategies (R package), val.prob · Collins GS et al. (2015)
TRIPOD statement. BMJ 350:g7594 · Debray TPA et al. (2017) A guide to systematic review and
meta-analysis of prediction model performance. BMJ 356:i6460.</p>
</body></html>
"""


__all__ = ["levels_list", "quantities_table", "quantity_rows", "render_clinical_html"]
