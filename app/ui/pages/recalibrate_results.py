"""What the Recalibrate page shows once methods are fitted: the per-method progress bars,
the comparison table with its intervals and best marks, the recommendation card and the
download links (split from :mod:`app.ui.pages.recalibrate`, which wires the callbacks)."""

from __future__ import annotations

from typing import Any

from dash import html

from app.ui.components import error_note, info_note


def method_progress(steps: list[dict[str, Any]]) -> list[html.Div]:
    """One labelled progress bar per method of the running comparison."""
    rows = []
    for step in steps:
        fraction = float(step.get("fraction") or 0.0)
        status = step.get("status", "")
        rows.append(html.Div([
            html.Span(step.get("name", step.get("method", "")), className="method-name"),
            html.Div(html.Div(className=f"progress-fill progress-{status}",
                              style={"width": f"{fraction:.0%}"}),
                     className="progress method-bar"),
            html.Span(f"{status}: {step.get('message', '')}", className="method-message"),
        ], className=f"method-row method-{step.get('method', '')}"))
    return rows


def done_message(result: dict[str, Any]) -> html.Div:
    """How many methods were fitted, on which held-out rows, and which failed and why."""
    comparison = result["comparison"]
    lines = [info_note(f"Fitted {len(result['recalibrations'])} method(s); held-out rows: "
                       f"{comparison['n']:,} ({comparison['scheme']}).")]
    lines += [error_note(f"{failure['method']} failed: {failure['message']}")
              for failure in result.get("failed", [])]
    # row weights: which methods took them, and that the comparison table does not yet
    lines += [info_note(f"{fitted['name']}: {fitted['weights_note']}")
              for fitted in result["recalibrations"] if fitted.get("weights_note")]
    if comparison.get("weights_note"):
        lines.append(info_note(f"Comparison table: {comparison['weights_note']}"))
    return html.Div(lines)


def interval_notes(recalibrations: list[dict[str, Any]]) -> html.Div:
    """Under the table: the mean interval width of each method that gives intervals
    (Venn-Abers), on the same held-out rows as the table."""
    notes = [info_note(
        f"{fitted['name']}: mean width of the probability intervals on the "
        f"{fitted['n_heldout']:,} held-out rows, p1 − p0 = {fitted['interval_width']:.4f} "
        "(averaged over classes). Each row's interval is in the download's p0_<class> "
        "(lower end) and p1_<class> (upper end) columns; the interval narrows as the "
        "calibration rows grow.")
        for fitted in recalibrations if fitted.get("interval_width") is not None]
    return html.Div(notes, id="recal-interval-notes")


def _cell(entry: dict[str, Any], best: bool) -> html.Td:
    value = entry.get("value")
    if value is None:
        return html.Td("—", title=entry.get("note") or "not available")
    parts: list[Any] = [html.Span(f"{value:.4f}", className="cell-value")]
    if entry.get("low") is not None and entry.get("high") is not None:
        parts.append(html.Span(f"{entry['low']:.4f}–{entry['high']:.4f}",
                               className="cell-interval"))
    elif entry.get("variable"):
        parts.append(html.Span(f"along {entry['variable']}", className="cell-interval"))
    title = "; ".join(t for t in ("best in this column" if best else "", entry.get("note"))
                      if t)
    return html.Td(parts, className="best" if best else None, title=title or None)


def comparison_table(comparison: dict[str, Any]) -> html.Div:
    """Rows: uncalibrated first, then each method; columns: measures with 95% intervals."""
    columns = comparison["columns"]
    header = html.Tr([html.Th("method (held-out rows)")] + [
        html.Th([column["label"], html.Span(" ↓" if column["better"] == "lower" else " ↑",
                                            className="direction"),
                 *_mlce_setting(comparison, column["key"])],
                title=column["meaning"]) for column in columns])
    body = []
    for number, row in enumerate(comparison["rows"]):
        name = (f"uncalibrated (n = {comparison['n']:,})" if number == 0 else row["name"])
        cells = [html.Td(name, className="method-cell")]
        cells += [_cell(row["values"].get(column["key"], {}), column["key"] in row["best"])
                  for column in columns]
        body.append(html.Tr(cells, className="uncalibrated-row" if number == 0 else None))
    legend = (f"Bold green: best in the column (ties shared); ↓ lower is better, ↑ higher. "
              f"Under each value: bootstrap 95% interval ({comparison['n_bootstrap']} seeded "
              "resamples, the same rows for every method). MLCE and max VECE are maxima, "
              "shown without intervals: they are biased upward and vary from sample to "
              "sample. MLCE depends on γ and the representation φ, so it differs from the "
              "Local page's MLCE unless γ, φ and the rows are the same. MLCE: "
              f"{comparison.get('mlce_note') or 'n/a'}")
    return html.Div([html.Div(html.Table([html.Thead(header), html.Tbody(body)],
                                         className="table comparison-table",
                                         id="recal-comparison"), className="table-scroll"),
                     html.P(legend, className="table-legend")])


def _mlce_setting(comparison: dict[str, Any], key: str) -> list[html.Span]:
    """Under the MLCE header: the bandwidth and the representation it was computed with."""
    if key != "mlce" or comparison.get("mlce_gamma") is None:
        return []
    space = comparison.get("mlce_space") or "no features"
    return [html.Span(f"γ = {comparison['mlce_gamma']:g}, φ = {space}",
                      className="cell-interval mlce-setting")]


#: The card's title per verdict of the advice (a recommended method gets its name).
_VERDICT_TITLES = {
    "keep_uncalibrated": "Recommendation: keep the uncalibrated probabilities",
    "none_helps": "No method fitted helps: keep the uncalibrated probabilities",
    "nothing_to_compare": "Recommendation: keep the uncalibrated probabilities",
}


def recommendation_card(comparison: dict[str, Any]) -> html.Div:
    """The advised probabilities and the reasons (NLL and Brier weighed with the
    calibration errors), and methods likely to help when no fitted one does."""
    advice = comparison["recommendation"]
    verdict = advice.get("verdict") or ("keep_uncalibrated" if advice["keep_uncalibrated"]
                                        else "recommended")
    title = _VERDICT_TITLES.get(verdict, f"Recommendation: {advice['name']}")
    parts: list[Any] = [html.H3(title),
                        html.Ul([html.Li(reason) for reason in advice["reasons"]])]
    if advice.get("suggestions"):
        parts += [html.H4("Methods likely to help"), html.Ul([
            html.Li([html.Strong(item["name"]), f" ({item['method']}): {item['reason']}."],
                    className=f"suggestion suggestion-{item['method']}")
            for item in advice["suggestions"]], id="recal-suggestions")]
    return html.Div(parts, className=f"panel recommendation recommendation-{verdict}",
                    id="recal-recommendation-card")


#: The page's words for each choice of downloaded scores (``scores=`` of the download).
_SCORE_LABELS = {"model": "corrected by the exported model",
                 "cross_fitted": "cross-fitted (what the comparison scored)"}
_CROSS_FITTED_NOTE = (
    "Corrected by the exported model: the fitted recalibrator (the JSON) applied to every "
    "row, the same numbers as applying it to this file below or with 'calibdash apply'. "
    "Cross-fitted (datasets without a split column): each row corrected by the one of the "
    "five cross-fitting models fitted without it, the scores the comparison above "
    "measured; one input score can come out differently in different folds.")

_SPLIT_NOTE = (
    "Corrected by the exported model: the fitted recalibrator (the JSON) applied to every "
    "row, the same numbers as applying it to this file below or with 'calibdash apply'; "
    "its test rows are what the comparison above measured.")


def _table_links(base: str, scores: str, query: str) -> html.Li:
    """CSV and Parquet links to one choice of corrected scores."""
    kind = "" if scores == "model" else "crossfitted-"
    return html.Li([
        html.Span(_SCORE_LABELS[scores], className="download-label"), ": ",
        html.A("CSV", href=f"{base}/download?format=csv&scores={scores}{query}",
               className=f"download-{kind}csv", download=""), " · ",
        html.A("Parquet", href=f"{base}/download?format=parquet&scores={scores}{query}",
               className=f"download-{kind}parquet", download=""),
    ], className=f"download-scores download-scores-{scores}")


def download_list(stored: list[dict[str, Any]], extra: list[str]) -> html.Div:
    """Per method: the exported model's corrected probabilities (CSV, Parquet), the
    cross-fitted ones the comparison scored when there was no split, and the fitted
    recalibrator."""
    if not stored:
        return html.Div()
    query = f"&columns={','.join(extra)}" if extra else ""
    items = []
    for entry in stored:
        base = f"/api/v1/recalibrations/{entry['id']}"
        choices = ["model", "cross_fitted"] if entry.get("cross_fitted") else ["model"]
        items.append(html.Li([
            html.Strong(entry["name"]),
            html.Ul([*(_table_links(base, scores, query) for scores in choices),
                     html.Li([html.Span("fitted recalibrator", className="download-label"),
                              ": ", html.A("JSON", href=f"{base}/model",
                                           className="download-model", download="")])]),
        ], className=f"download-item download-{entry['method']}"))
    note = (_CROSS_FITTED_NOTE if any(entry.get("cross_fitted") for entry in stored)
            else _SPLIT_NOTE)
    return html.Div([html.P(note, className="download-note"), html.Ul(items)])
