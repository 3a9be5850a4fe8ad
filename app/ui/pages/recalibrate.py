"""Recalibrate page: fit methods as a background job, compare on held-out rows, download."""

from __future__ import annotations

from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update

from app.jobs import Progress
from app.services.context import Services
from app.services.recalibration import method_catalogue
from app.ui import ids
from app.ui.components import error_note, info_note, progress_bar
from app.ui.figures import comparison_figure, empty_figure

_COLUMNS = (("ece", "ECE"), ("mce", "MCE"), ("brier", "Brier"), ("nll", "NLL"),
            ("accuracy", "Accuracy"))


def layout(services: Services) -> html.Div:
    options = [{"label": f" {m['name']}" + (" (uses features)" if m["needs_features"] else ""),
                "value": m["method"]} for m in method_catalogue()]
    return html.Div([
        html.H1("Recalibrate"),
        html.P("Fit recalibrators on the calibration rows (the split column; without one, "
               "5-fold cross-fitting) and compare them on held-out rows. Download the corrected "
               "probabilities or the fitted recalibrator."),
        html.Div([html.Label("Methods", className="field-label"),
                  dcc.Checklist(id=ids.METHOD_SELECT, options=options, value=["temperature"],
                                className="checklist checklist-inline")], className="control"),
        html.Button("Fit and compare", id=ids.FIT_BUTTON, className="button"),
        progress_bar(ids.FIT_PROGRESS, f"{ids.FIT_PROGRESS}-wrapper"),
        html.Div(id=ids.FIT_STATUS),
        dcc.Store(id=ids.FIT_JOB),
        dcc.Interval(id=ids.FIT_POLL, interval=400, disabled=True),
        html.Div(id=ids.RECAL_RESULTS, children=[
            html.Div(id=ids.RECAL_TABLE),
            dcc.Graph(id=ids.RECAL_GRAPH, figure=empty_figure(
                "Fit a method to compare reliability before and after."),
                config={"displaylogo": False}),
            html.Div(id=ids.RECAL_DOWNLOADS),
        ]),
    ])


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(ids.FIT_JOB, "data"), Output(ids.FIT_POLL, "disabled"),
                  Output(ids.FIT_STATUS, "children", allow_duplicate=True),
                  Input(ids.FIT_BUTTON, "n_clicks"), State(ids.DATASET_PICKER, "value"),
                  State(ids.METHOD_SELECT, "value"), prevent_initial_call=True)
    def start(clicks: int | None, dataset_id: str | None,
              methods: list[str] | None) -> tuple[Any, Any, Any]:
        if not clicks:
            return no_update, no_update, no_update
        if not dataset_id:
            return None, True, error_note("Choose a dataset first.")
        if not methods:
            return None, True, error_note("Choose at least one method.")

        def work(progress: Progress) -> list[dict[str, Any]]:
            results = []
            for number, method in enumerate(methods):
                progress.update(number / len(methods), f"fitting {method} "
                                f"({number + 1}/{len(methods)})")
                results.append(services.recalibrations.fit(dataset_id, method))
            return results

        job = services.jobs.submit("recalibration", work)
        return job.id, False, info_note("Fitting…")

    @app.callback(Output(ids.FIT_PROGRESS, "style"), Output(f"{ids.FIT_PROGRESS}-wrapper", "style"),
                  Output(ids.FIT_STATUS, "children"), Output(ids.FIT_POLL, "disabled",
                                                             allow_duplicate=True),
                  Output(ids.RECAL_TABLE, "children"), Output(ids.RECAL_GRAPH, "figure"),
                  Output(ids.RECAL_DOWNLOADS, "children"),
                  Input(ids.FIT_POLL, "n_intervals"), State(ids.FIT_JOB, "data"),
                  prevent_initial_call=True)
    def poll(_: int, job_id: str | None) -> tuple[Any, ...]:
        job = services.jobs.get(job_id) if job_id else None
        if job is None:
            return (no_update,) * 3 + (True,) + (no_update,) * 3
        snapshot = job.snapshot()
        bar = {"width": f"{snapshot['progress']:.0%}"}
        if snapshot["status"] in ("queued", "running"):
            status = info_note(f"{snapshot['message']} — {snapshot['progress']:.0%}")
            return bar, {}, status, False, no_update, no_update, no_update
        if snapshot["status"] != "succeeded":
            message = (snapshot["error"] or {}).get("message", snapshot["status"])
            return bar, {"display": "none"}, error_note(f"Fitting failed: {message}"), True, \
                no_update, no_update, no_update
        results = snapshot["result"]
        return (bar, {"display": "none"}, info_note(_done_message(results)), True,
                _table(results), comparison_figure(results), _downloads(results))


def _done_message(results: list[dict[str, Any]]) -> str:
    first = results[0]
    return (f"Fitted {len(results)} method(s); held-out rows: {first['n_heldout']:,} "
            f"({first['scheme']}).")


def _table(results: list[dict[str, Any]]) -> html.Table:
    header = html.Tr([html.Th("method (held-out rows)")] + [html.Th(label) for _, label in
                                                            _COLUMNS])
    before = results[0]["before"]
    rows = [html.Tr([html.Td(f"uncalibrated (n = {results[0]['n_heldout']:,})")] +
                    [html.Td(f"{before[key]:.4f}") for key, _ in _COLUMNS])]
    best = {key: (max if key == "accuracy" else min)(r["after"][key] for r in results)
            for key, _ in _COLUMNS}
    for result in results:
        cells = [html.Td(result["name"])]
        for key, _ in _COLUMNS:
            value = result["after"][key]
            marked = len(results) > 1 and value == best[key]
            cells.append(html.Td(f"{value:.4f}", className="best" if marked else None))
        rows.append(html.Tr(cells))
    return html.Table([html.Thead(header), html.Tbody(rows)], className="table",
                      id="recal-comparison")


def _downloads(results: list[dict[str, Any]]) -> html.Div:
    items = []
    for result in results:
        base = f"/api/v1/recalibrations/{result['id']}"
        items.append(html.Li([
            html.Strong(result["name"]), ": corrected probabilities as ",
            html.A("CSV", href=f"{base}/download?format=csv", className="download-csv",
                   download=""), " · ",
            html.A("Parquet", href=f"{base}/download?format=parquet", download=""), " · ",
            html.A("fitted recalibrator (JSON)", href=f"{base}/model", download=""),
        ]))
    return html.Div([html.H3("Downloads"), html.Ul(items)])
