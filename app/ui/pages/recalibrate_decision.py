"""The Recalibrate page's "does recalibration change what you would do?" panel: each
fitted method's net benefit on the held-out rows beside the uncalibrated model's, at
thresholds the user picks, with the paired bootstrap interval of the difference (split
from :mod:`app.ui.pages.recalibrate`, which places it and wires it)."""

from __future__ import annotations

import asyncio
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update

from app.services.context import Services
from app.services.datasets import NotFound
from app.services.decision import (
    RECALIBRATION_THRESHOLDS,
    parse_thresholds,
    recalibration_net_benefit,
)
from app.ui import ids
from app.ui.components import error_note, weights_note
from calibcore.exceptions import CalibrationInputError

#: Component ids of this panel.
RECAL_THRESHOLDS = "recal-thresholds"
RECAL_DECISION = "recal-decision"


def decision_panel() -> html.Div:
    """The thresholds input and the table it fills."""
    default = ", ".join(f"{t:g}" for t in RECALIBRATION_THRESHOLDS)
    return html.Div([
        html.H2("Does recalibration change what you would do?"),
        html.P("A row is treated when its probability of the event is at least the "
               "threshold. Net benefit (Vickers & Elkin 2006) counts the true positives per "
               "row and charges each false positive t / (1 − t); a recalibration that moves "
               "probabilities across a threshold changes decisions, and the difference says "
               "whether that is worth anything on the held-out rows. See the Decision curves "
               "page for the whole curve."),
        html.Div([html.Label("Thresholds (comma-separated, in (0, 1))",
                             className="field-label", htmlFor=RECAL_THRESHOLDS),
                  dcc.Input(id=RECAL_THRESHOLDS, type="text", value=default, debounce=True,
                            placeholder=default, className="text-input")],
                 className="control"),
        html.Div(id=RECAL_DECISION),
    ], className="panel decision-panel")


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _difference_cell(entry: dict[str, Any], index: int) -> html.Td:
    """The method's net benefit, its change with the paired interval, and the share of
    decisions it changes; coloured when the interval excludes 0."""
    difference, low, high = (entry["difference"][index], entry["lower"][index],
                             entry["upper"][index])
    excludes = entry["difference_excludes_zero"][index]
    interval = ("" if low is None else f" [{_number(low, True)}, {_number(high, True)}]")
    kind = ("" if not excludes else " nb-better" if difference > 0 else " nb-worse")
    return html.Td([
        html.Span(_number(entry["net_benefit"][index]), className="cell-value"),
        html.Span(f"Δ {_number(difference, True)}{interval}", className="cell-interval"),
        html.Span(f"{entry['changed'][index]:.1%} of decisions changed",
                  className="cell-interval"),
    ], className=f"nb-cell{kind}")


def _where(thresholds: list[float], entry: dict[str, Any]) -> str:
    """The thresholds where a method's interval excludes 0, each with its direction."""
    return ", ".join(f"{t:g} ({'higher' if difference > 0 else 'lower'})"
                     for t, flag, difference in zip(thresholds, entry["difference_excludes_zero"],
                                                    entry["difference"], strict=True) if flag)


def net_benefit_table(result: dict[str, Any]) -> html.Div:
    """Rows: treat all, the uncalibrated model, each method; columns: thresholds."""
    thresholds = result["thresholds"]
    header = html.Tr([html.Th("net benefit (held-out rows)"),
                      *(html.Th(f"t = {t:g}") for t in thresholds)])
    rows = [html.Tr([html.Td("treat all", className="method-cell"),
                     *(html.Td(_number(v)) for v in result["treat_all"])]),
            html.Tr([html.Td(f"uncalibrated (n = {result['n']:,})", className="method-cell"),
                     *(html.Td(_number(v)) for v in result["uncalibrated"])],
                    className="uncalibrated-row")]
    rows += [html.Tr([html.Td(entry["name"], className="method-cell"),
                      *(_difference_cell(entry, i) for i in range(len(thresholds)))],
                     className=f"nb-row nb-{entry['method']}") for entry in result["methods"]]
    changed = [f"{entry['name']} at {_where(thresholds, entry)}"
               for entry in result["methods"] if any(entry["difference_excludes_zero"])]
    verdict = ("Net benefit changes beyond its interval for " + "; ".join(changed) + "."
               if changed else "No method changes net benefit beyond its interval at these "
               "thresholds: recalibrating does not change the value of the decisions here.")
    legend = (f"Under each method's value: Δ = its net benefit − the uncalibrated model's, "
              f"with the paired bootstrap 95% interval ({result['n_bootstrap']} seeded "
              f"resamples of the held-out rows, {result['scheme']}), and the share of rows "
              "treated by one and not the other. Green or red: the interval excludes 0. "
              f"Event: class {result['positive_class']}, prevalence "
              f"{result['prevalence']:.3f}.")
    return html.Div([weights_note(result),
                     html.P(verdict, className="nb-verdict", id="recal-decision-verdict"),
                     html.Div(html.Table([html.Thead(header), html.Tbody(rows)],
                                         className="table comparison-table",
                                         id="recal-decision-table"),
                              className="table-scroll"),
                     html.P(legend, className="table-legend")])


def register_decision(app: Dash, services: Services, result_store: str) -> None:
    """Fill the table when methods are fitted (``result_store`` holds them) or the
    thresholds change."""
    @app.callback(Output(RECAL_DECISION, "children"), Input(result_store, "data"),
                  Input(RECAL_THRESHOLDS, "value"), State(ids.DATASET_PICKER, "value"),
                  prevent_initial_call=True)
    async def net_benefit(stored: list[dict[str, Any]] | None, text: str | None,
                          dataset_id: str | None) -> Any:
        if not stored or not dataset_id:
            return no_update
        try:
            thresholds = parse_thresholds(text, RECALIBRATION_THRESHOLDS, sort=True)
            result = await asyncio.to_thread(
                recalibration_net_benefit, services, dataset_id,
                [entry["id"] for entry in stored], thresholds=thresholds)
        except (CalibrationInputError, NotFound) as exc:
            return error_note(str(exc))
        return net_benefit_table(result)
