"""Clinical page: the calibration report clinical prediction research asks for — O:E,
calibration-in-the-large, calibration intercept and slope, Spiegelhalter's test, ICI,
E50, E90, Emax, Hosmer-Lemeshow — with the flexible calibration curve, the level of the
calibration hierarchy in words, and a printable one-page report."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from dash import Dash, Input, Output, dcc, html

from app.services.clinical import clinical_for
from app.services.context import Services
from app.services.datasets import NotFound
from app.ui import ids
from app.ui.clinical_report import quantity_rows
from app.ui.components import control, error_note, info_note, weights_note
from app.ui.figures import empty_figure
from app.ui.figures.clinical import clinical_curve_figure
from app.ui.shell_helpers import dataset_summary
from calibcore.exceptions import CalibrationInputError

#: Component ids of this page (the shared ones are in app.ui.ids).
CLINICAL_TARGET = "clinical-target"
CLINICAL_SUBSET = "clinical-subset"
CLINICAL_VERDICT = "clinical-verdict"
CLINICAL_TABLE = "clinical-table"
CLINICAL_GRAPH = "clinical-graph"
CLINICAL_REPORT_LINK = "clinical-report-link"

_SUBSETS = [{"label": "all rows", "value": "all"}, {"label": "test rows", "value": "test"},
            {"label": "calibration rows", "value": "calibration"}]


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Clinical calibration report"),
        html.P("The calibration of a risk model as clinical prediction research reports it: "
               "observed against expected events, calibration-in-the-large, the calibration "
               "intercept and slope with 95% intervals, Spiegelhalter's test, the distance of "
               "the flexible calibration curve from the diagonal (ICI, E50, E90, Emax) and "
               "Hosmer-Lemeshow, computed as R's rms::val.prob computes them; then the level "
               "of Van Calster et al.'s calibration hierarchy (mean, weak, moderate) the data "
               "are consistent with. For more than two classes, one class against the rest."),
        html.Div([
            control("Class (P(class) against the rest)", CLINICAL_TARGET,
                    dcc.Dropdown(id=CLINICAL_TARGET, clearable=False)),
            control("Rows", CLINICAL_SUBSET,
                    dcc.RadioItems(id=CLINICAL_SUBSET, options=_SUBSETS, value="all",
                                   inline=True, className="radio")),
            html.A("Printable one-page report (print to PDF)", id=CLINICAL_REPORT_LINK,
                   href="", target="_blank", className="button button-secondary",
                   style={"textDecoration": "none", "alignSelf": "end"}),
        ], className="controls"),
        dcc.Loading(html.Div([html.Div(id=CLINICAL_VERDICT),
                              dcc.Graph(id=CLINICAL_GRAPH, figure=empty_figure("")),
                              html.Div(id=CLINICAL_TABLE, className="table-scroll")])),
    ])


def quantities_table(report: dict[str, Any]) -> html.Table:
    """Each quantity with its estimate, 95% interval, perfect value and method."""
    header = html.Tr([html.Th(name) for name in
                      ("quantity", "estimate", "95% CI", "perfect", "method")])
    rows = [html.Tr([html.Td(label), html.Td(value, className="number"),
                     html.Td(interval, className="number"), html.Td(ideal),
                     html.Td(method, className="card-note")])
            for label, value, interval, ideal, method in quantity_rows(report)]
    return html.Table([html.Thead(header), html.Tbody(rows)], className="table")


def verdict_note(report: dict[str, Any]) -> html.Div:
    """The verdict and, per level, whether the data are consistent with it and why."""
    return html.Div([
        html.Strong(report["verdict"]),
        html.Ul([html.Li([html.Strong(f"{level['name'].title()}: "
                                      f"{'consistent' if level['met'] else 'not consistent'}"),
                          f" — {level['reason']}."]) for level in report["levels"]]),
        *[html.Div(note, className="card-note") for note in report["notes"]],
    ], className="note note-info" if all(level["met"] for level in report["levels"])
        else "note note-warning")


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(CLINICAL_TARGET, "options"), Output(CLINICAL_TARGET, "value"),
                  Input(ids.DATASET_PICKER, "value"))
    async def choose_dataset(dataset_id: str | None) -> tuple[Any, ...]:
        summary = await dataset_summary(services, dataset_id)
        if summary is None:
            return [], None
        classes = [str(c) for c in summary["classes"]]
        return classes, classes[1] if len(classes) == 2 else classes[0]

    @app.callback(Output(CLINICAL_VERDICT, "children"), Output(CLINICAL_GRAPH, "figure"),
                  Output(CLINICAL_TABLE, "children"), Output(CLINICAL_REPORT_LINK, "href"),
                  Input(ids.DATASET_PICKER, "value"), Input(CLINICAL_TARGET, "value"),
                  Input(CLINICAL_SUBSET, "value"))
    async def draw(dataset_id: str | None, target: str | None,
                   subset: str | None) -> tuple[Any, ...]:
        blank = empty_figure("")
        if not dataset_id:
            return info_note("Choose or upload a dataset."), blank, None, ""
        try:
            report = await asyncio.to_thread(clinical_for, services, dataset_id,
                                             target=target,
                                             subset=subset or "all")  # type: ignore[arg-type]
        except (CalibrationInputError, NotFound) as exc:
            return error_note(str(exc)), blank, None, ""
        query = urlencode({"target": report["target"], "subset": report["subset"]})
        link = f"/api/v1/datasets/{dataset_id}/clinical/report.html?{query}"
        return (html.Div([weights_note(report), verdict_note(report)]),
                clinical_curve_figure(report), quantities_table(report), link)
