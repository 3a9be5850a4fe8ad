"""Variables page: the VECE ranking of variables and the calibration plot along one
(Kelly & Smyth 2023), in the paper's top-label view or, for binary models, the positive
view (P(class 1) against the frequency of class 1).

The ranking comes from :func:`app.services.variables.request_ranking`: ready at
once when cached or small, otherwise a job whose progress the page polls. A
variable chosen in the table, the bar chart or the dropdown is drawn as in the
paper's Figure 1b (numeric) or as grouped bars per category.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import dash_ag_grid as dag
from dash import Dash, Input, Output, State, ctx, dcc, html, no_update

from app.services import variables
from app.services.context import Services
from app.services.datasets import NotFound
from app.ui import ids
from app.ui.components import error_note, grid_number, info_note, progress_bar, weights_note
from app.ui.figures import empty_figure
from app.ui.figures.variables import RANGE_WORDS, format_value, ranking_figure, variable_figure
from app.ui.job_panel import running_status
from app.ui.shell_helpers import VIEW_LABELS, dataset_summary, folded_view_note, view_options
from calibcore.exceptions import CalibrationInputError

#: Component ids of this page (the shared ones are in app.ui.ids).
VAR_SUBSET = "var-subset"
VAR_BINS = "var-bins"
VAR_PERMUTATIONS = "var-permutations"
VAR_JOB = "var-job"
VAR_POLL = "var-poll"
VAR_PROGRESS = "var-progress"
VAR_STATUS = "var-status"
VAR_RANKING = "var-ranking"  # dcc.Store holding the ranking JSON
VAR_TABLE = "var-table"
VAR_BARS = "var-bars"
VAR_SELECT = "var-select"
VAR_SCALE = "var-scale"
VAR_SPAN = "var-span"
VAR_RANGE = "var-range"  # where the curves are drawn: 5-95, 1-99 or all
VAR_VIEW = "var-view"
VAR_VIEW_NOTE = "var-view-note"
VAR_CURVE = "var-curve"
VAR_NOTE = "var-note"
VAR_CATEGORY_TABLE = "var-category-table"
VAR_CATEGORIES = "var-categories"  # the per-category table inside VAR_CATEGORY_TABLE

_HIDDEN = {"display": "none"}
_SCALES = [{"label": "error rate & predicted error", "value": "error"},
           {"label": "accuracy & confidence", "value": "accuracy"}]
_RANGES = [{"label": "5th–95th percentile", "value": "5-95"},
           {"label": "1st–99th", "value": "1-99"},
           {"label": "all values", "value": "all"}]
# Numbers as d3 formats them in the browser: 4 decimals, 3 significant digits for p
# (0.00498, 0.896), thousands separators for counts; empty where there is no value.
_FIXED4 = grid_number(".4f")
_SIGNIFICANT3 = grid_number(".3g")
_COUNT = grid_number(",")
# numbers right-aligned with tabular digits; a dotted header says it has a tooltip
_NUMERIC: dict[str, Any] = {"type": "numericColumn", "minWidth": 62, "flex": 1,
                            "headerClass": ["ag-right-aligned-header", "has-tip"]}
# "kind" sits next to the name: as the last column it was cut off (scrolled out of the
# table's box) whenever names were long.
_COLUMNS: list[dict[str, Any]] = [
    # long names wrap, anywhere (names seldom have spaces), rather than push the other
    # columns out of sight
    {"field": "variable", "headerName": "variable", "minWidth": 100, "flex": 2,
     "wrapText": True, "autoHeight": True, "cellClass": "wrap-anywhere"},
    {"field": "kind", "headerName": "kind", "width": 86},
    {**_NUMERIC, "field": "vece", "headerName": "VECE", "minWidth": 72, "sort": "desc",
     "valueFormatter": _FIXED4,
     "headerTooltip": "variable-based ECE: mean |error − predicted error| over equal-mass "
                      "bins of the variable (one bin per category)"},
    {**_NUMERIC, "field": "vce_max", "headerName": "VCE(v*)", "minWidth": 82,
     "valueFormatter": _FIXED4,
     "headerTooltip": "largest gap between the error and predicted-error curves (numeric) or "
                      "between a category's error and predicted error"},
    {"field": "v_star_text", "headerName": "v*", "minWidth": 64, "flex": 1,
     "tooltipField": "v_star_text",
     "headerClass": "has-tip", "headerTooltip": "where that largest gap occurs"},
    {**_NUMERIC, "field": "p_value", "headerName": "p-value", "minWidth": 78,
     "valueFormatter": _SIGNIFICANT3, "cellClassRules": {"significant": "params.data.significant"},
     "headerTooltip": "permutation test: how often shuffling the variable gives a VECE this "
                      "large"},
    {**_NUMERIC, "field": "n", "headerName": "n", "valueFormatter": _COUNT,
     "headerTooltip": "rows used"},
    {**_NUMERIC, "field": "n_missing", "headerName": "n missing", "minWidth": 92,
     "valueFormatter": _COUNT,
     "headerTooltip": "rows left out because the variable is missing"},
]


# The grid's page that shows the selected row, in the grid's current sort order (only the
# browser knows it), when the choice came from the bar chart or the dropdown: AG Grid's own
# scrollTo does not turn pages.
_PAGE_OF_SELECTED_JS = """
function(selected) {
    const skip = window.dash_clientside.no_update;
    let api;
    try { api = window.dash_ag_grid.getApi(GRID_ID); } catch (error) { return skip; }
    const node = selected && selected.length ? api.getRowNode(selected[0].variable) : null;
    if (!node || node.rowIndex === null || node.rowIndex === undefined) { return skip; }
    const page = Math.floor(node.rowIndex / api.paginationGetPageSize());
    return page === api.paginationGetCurrentPage() ? skip : page;
}
""".replace("GRID_ID", json.dumps(VAR_TABLE))


def _ranking_table() -> dag.AgGrid:
    """The ranking as a sortable grid; one row selected: the variable drawn below."""
    return dag.AgGrid(
        id=VAR_TABLE, columnDefs=_COLUMNS, rowData=[],
        getRowId="params.data.variable",
        # a narrow column's header wraps ("n missing") rather than being cut short
        defaultColDef={"sortable": True, "resizable": True, "wrapHeaderText": True,
                       "autoHeaderHeight": True},
        dashGridOptions={"rowSelection": {"mode": "singleRow", "enableClickSelection": True,
                                          "checkboxes": False},
                         "tooltipShowDelay": 300, "domLayout": "autoHeight",
                         "pagination": True, "paginationPageSize": 15,
                         "paginationPageSizeSelector": False},
        className="ag-theme-alpine")


def layout(services: Services) -> html.Div:
    return html.Div([
        html.H1("Variables"),
        html.P("Is the model miscalibrated along a variable even when its overall ECE looks "
               "fine? Each feature is ranked by its variable-based ECE (VECE: equal-mass bins "
               "of the variable, one bin per category), with the largest gap VCE(v*) between "
               "the error rate and the predicted error, and a permutation p-value that tells "
               "signal from noise. Click a variable to see both curves along it. The paper "
               "defines the errors on the top label; for a binary model the positive view "
               "follows P(class 1) against the frequency of class 1 instead."),
        html.Div([
            html.Div([html.Label("Rows", className="field-label"),
                      dcc.RadioItems(id=VAR_SUBSET, value="all", className="radio",
                                     options=[{"label": s, "value": s}
                                              for s in ("all", "calibration", "test")])],
                     className="control"),
            html.Div([html.Label("VECE bins (numeric variables)", className="field-label"),
                      dcc.Slider(id=VAR_BINS, min=2, max=30, step=1, value=10,
                                 marks={m: str(m) for m in (2, 5, 10, 15, 20, 30)})],
                     className="control control-wide"),
            html.Div([html.Label("Permutations (p-value)", className="field-label"),
                      dcc.RadioItems(id=VAR_PERMUTATIONS, value=200, className="radio",
                                     options=[{"label": "none", "value": 0},
                                              {"label": "200", "value": 200},
                                              {"label": "1,000", "value": 1000}])],
                     className="control"),
            html.Div([html.Label("View", className="field-label", htmlFor=VAR_VIEW),
                      dcc.RadioItems(id=VAR_VIEW, value="top_label", className="radio",
                                     options=[{"label": VIEW_LABELS["top_label"],
                                               "value": "top_label"}])],
                     className="control"),
        ], className="controls"),
        html.Div(id=VAR_VIEW_NOTE),
        progress_bar(VAR_PROGRESS, f"{VAR_PROGRESS}-wrapper"),
        html.Div(id=VAR_STATUS),
        dcc.Store(id=VAR_RANKING),
        dcc.Store(id=VAR_JOB),
        dcc.Interval(id=VAR_POLL, interval=400, disabled=True),
        html.Div([
            html.Div(_ranking_table(), className="variables-table"),
            dcc.Graph(id=VAR_BARS, figure=empty_figure("Ranking variables…"),
                      config={"displaylogo": False}, className="variables-bars"),
        ], className="variables-ranking"),
        html.H2("Calibration along a variable"),
        html.Div([
            html.Div([html.Label("Variable", className="field-label"),
                      dcc.Dropdown(id=VAR_SELECT, clearable=False,
                                   placeholder="choose a variable")], className="control"),
            html.Div([html.Label("Show", className="field-label"),
                      dcc.RadioItems(id=VAR_SCALE, options=_SCALES, value="error",
                                     className="radio")], className="control"),
            html.Div([html.Label("LOESS span (fraction of rows per local fit)",
                                 className="field-label"),
                      dcc.Slider(id=VAR_SPAN, min=0.1, max=1.0, step=0.05, value=0.8,
                                 marks={m: f"{m:g}" for m in (0.1, 0.2, 0.4, 0.6, 0.8, 1.0)})],
                     className="control control-wide"),
            html.Div([html.Label("Range of the variable (numeric)", className="field-label",
                                 title="where the curves are drawn: the paper's 5th–95th "
                                       "percentiles hide the tails, where a model is often "
                                       "most wrong"),
                      dcc.RadioItems(id=VAR_RANGE, options=_RANGES, value="5-95",
                                     className="radio")], className="control"),
        ], className="controls"),
        html.Div(id=VAR_NOTE),
        dcc.Loading(dcc.Graph(id=VAR_CURVE, figure=empty_figure("Choose a variable."),
                              config={"displaylogo": False})),
        html.Div(id=VAR_CATEGORY_TABLE),
    ])


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(VAR_VIEW, "options"), Output(VAR_VIEW, "value"),
                  Input(ids.DATASET_PICKER, "value"))
    async def choose_dataset(dataset_id: str | None) -> tuple[Any, Any]:
        """The paper's top-label view first; the positive view offered for two classes."""
        options, _ = view_options(await dataset_summary(services, dataset_id),
                                  ("top_label", "positive"))
        return options or no_update, "top_label"

    @app.callback(Output(VAR_VIEW_NOTE, "children"), Input(ids.DATASET_PICKER, "value"),
                  Input(VAR_VIEW, "value"), Input(VAR_SUBSET, "value"))
    async def view_note(dataset_id: str | None, view: str | None, subset: Any) -> Any:
        if not dataset_id or view != "top_label":
            return None
        try:
            return await asyncio.to_thread(_folded_view_note, services, dataset_id, subset)
        except (CalibrationInputError, NotFound):
            return None

    @app.callback(Output(VAR_RANKING, "data"), Output(VAR_JOB, "data"),
                  Output(VAR_POLL, "disabled"), Output(VAR_STATUS, "children"),
                  Output(f"{VAR_PROGRESS}-wrapper", "style"),
                  Output(VAR_PROGRESS, "style"),
                  Input(ids.DATASET_PICKER, "value"), Input(VAR_SUBSET, "value"),
                  Input(VAR_BINS, "value"), Input(VAR_PERMUTATIONS, "value"),
                  Input(VAR_VIEW, "value"))
    async def start(dataset_id: str | None, subset: Any, n_bins: int,
                    n_permutations: int, view: Any) -> tuple[Any, ...]:
        if not dataset_id:
            return None, None, True, info_note("Choose or upload a dataset."), _HIDDEN, no_update
        params = variables.RankingParams(n_bins=n_bins, n_permutations=n_permutations,
                                         subset=subset, view=view or "top_label",
                                         random_state=services.settings.random_state)
        try:
            outcome = await asyncio.to_thread(
                variables.request_ranking, services, dataset_id, params)
        except (CalibrationInputError, NotFound) as exc:
            return None, None, True, error_note(str(exc)), _HIDDEN, no_update
        if outcome.job is None:
            return outcome.ranking, None, True, _ranking_note(outcome.ranking), _HIDDEN, \
                no_update
        snapshot = outcome.job.snapshot()
        return None, outcome.job.id, False, info_note(f"Ranking variables: "
                                                      f"{snapshot['message']}"), {}, \
            {"width": f"{snapshot['progress']:.0%}"}

    @app.callback(Output(VAR_RANKING, "data", allow_duplicate=True),
                  Output(VAR_POLL, "disabled", allow_duplicate=True),
                  Output(VAR_STATUS, "children", allow_duplicate=True),
                  Output(f"{VAR_PROGRESS}-wrapper", "style", allow_duplicate=True),
                  Output(VAR_PROGRESS, "style", allow_duplicate=True),
                  Input(VAR_POLL, "n_intervals"), State(VAR_JOB, "data"),
                  prevent_initial_call=True)
    def poll(_: int, job_id: str | None) -> tuple[Any, ...]:
        job = services.jobs.get(job_id) if job_id else None
        if job is None:
            return no_update, True, no_update, _HIDDEN, no_update
        snapshot = job.snapshot()
        bar = {"width": f"{snapshot['progress']:.0%}"}
        if snapshot["status"] in ("queued", "running"):
            return no_update, False, running_status(snapshot, "Ranking variables"), {}, bar
        if snapshot["status"] != "succeeded":
            message = (snapshot["error"] or {}).get("message", snapshot["status"])
            return None, True, error_note(f"Ranking failed: {message}"), _HIDDEN, bar
        ranking = snapshot["result"]
        return ranking, True, _ranking_note(ranking), _HIDDEN, bar

    # One callback reconciles the four places a variable is chosen (a new ranking, the grid,
    # the bar chart, the dropdown) and hands the choice to the dropdown and the grid's
    # selection, so the highlighted row is always the variable drawn. Dash lets a callback
    # take its own outputs as inputs; split in two, the grid and the dropdown would form a
    # loop.
    @app.callback(Output(VAR_TABLE, "rowData"), Output(VAR_SELECT, "options"),
                  Output(VAR_SELECT, "value"), Output(VAR_TABLE, "selectedRows"),
                  Input(VAR_RANKING, "data"), Input(VAR_TABLE, "selectedRows"),
                  Input(VAR_BARS, "clickData"), Input(VAR_SELECT, "value"))
    def choose(ranking: dict[str, Any] | None, selected_rows: Any,
               click: dict[str, Any] | None, current: str | None) -> tuple[Any, ...]:
        if ctx.triggered_id == VAR_TABLE:
            if isinstance(selected_rows, list) and selected_rows:  # a click (or Space)
                chosen = selected_rows[0]["variable"]
                return no_update, no_update, _changed(chosen, current), no_update
            # deselected (ctrl-click): the variable drawn stays chosen
            return no_update, no_update, no_update, _selection(current)
        if ctx.triggered_id == VAR_BARS and click and click.get("points"):
            chosen = click["points"][0]["y"]
            return no_update, no_update, _changed(chosen, current), _selection(chosen)
        if ctx.triggered_id == VAR_SELECT:
            return no_update, no_update, no_update, _selection(current)
        if not ranking:
            return [], [], None, []
        names = [row["variable"] for row in ranking["variables"]]
        options = [{"label": f"{row['variable']} ({row['kind']})", "value": row["variable"]}
                   for row in ranking["variables"]]
        chosen = current if current in names else (names[0] if names else None)
        return _table_rows(ranking), options, chosen, _selection(chosen)

    app.clientside_callback(_PAGE_OF_SELECTED_JS, Output(VAR_TABLE, "paginationGoTo"),
                            Input(VAR_TABLE, "selectedRows"), prevent_initial_call=True)

    @app.callback(Output(VAR_BARS, "figure"),
                  Input(VAR_RANKING, "data"), Input(VAR_SELECT, "value"))
    def draw_ranking(ranking: dict[str, Any] | None, selected: str | None) -> Any:
        if not ranking:
            return empty_figure("The ranking appears here.")
        return ranking_figure(ranking, selected)

    @app.callback(Output(VAR_CURVE, "figure"), Output(VAR_NOTE, "children"),
                  Output(VAR_CATEGORY_TABLE, "children"),
                  Input(VAR_SELECT, "value"), Input(VAR_SPAN, "value"),
                  Input(VAR_SCALE, "value"), Input(VAR_BINS, "value"),
                  Input(VAR_SUBSET, "value"), Input(VAR_RANGE, "value"),
                  Input(VAR_VIEW, "value"), State(ids.DATASET_PICKER, "value"))
    async def show_variable(name: str | None, span: float, scale: Any, n_bins: int,
                            subset: Any, curve_range: Any, view: Any,
                            dataset_id: str | None) -> tuple[Any, Any, Any]:
        if not dataset_id or not name:
            return empty_figure("Choose a variable."), None, None
        try:
            detail = await asyncio.to_thread(_detail, services, dataset_id, name, span, n_bins,
                                             subset, curve_range, view or "top_label")
        except variables.UnknownVariable:
            return no_update, no_update, no_update  # the dataset changed; a new choice follows
        except (CalibrationInputError, NotFound) as exc:
            return empty_figure(str(exc)), error_note(str(exc)), None
        return variable_figure(detail, scale), _detail_note(detail), _bins_table(detail)


def _detail(services: Services, dataset_id: str, name: str, span: float, n_bins: int,
            subset: Any, curve_range: Any, view: Any) -> dict[str, Any]:
    prediction_set = services.datasets.prediction_set(dataset_id)
    return variables.variable_detail(prediction_set, name, span=span, n_bins=n_bins,
                                     subset=subset, curve_range=curve_range, view=view,
                                     random_state=services.settings.random_state)


def _folded_view_note(services: Services, dataset_id: str, subset: Any) -> html.Div | None:
    """For a binary model in the top-label view: the positive-class ECE beside the
    top-label one, so nobody reads "calibrated" from the folded view."""
    return folded_view_note(services, dataset_id, subset,
                            "switch the view to the positive class to follow P(class 1) "
                            "along each variable")


def _changed(chosen: str, current: str | None) -> Any:
    # the same value again would redraw the curves for nothing
    return no_update if chosen == current else chosen


def _selection(name: str | None) -> dict[str, list[str]] | list[Any]:
    """The grid's ``selectedRows`` for one variable (rows are identified by their name)."""
    return {"ids": [name]} if name else []


def _table_rows(ranking: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**row, "v_star_text": "—" if row["v_star"] is None else format_value(row["v_star"])}
            for row in ranking["variables"]]


def _ranking_note(ranking: dict[str, Any] | None) -> html.Div | None:
    if not ranking:
        return None
    rows = ranking["variables"]
    flagged = [row["variable"] for row in rows if row.get("significant")]
    test = (f"{ranking['n_permutations']} permutations (smallest possible p = "
            f"{ranking['min_p_value']:.3g})" if ranking["n_permutations"] else
            "no permutation test")
    found = (f"{len(flagged)} of {len(rows)} variables have p < 0.05: {', '.join(flagged[:8])}"
             f"{'…' if len(flagged) > 8 else ''}." if flagged else
             f"No variable has p < 0.05 among {len(rows)}.")
    cached = " (cached)" if ranking.get("cached") else ""
    weights = weights_note(ranking)
    return html.Div([*([weights] if weights else []), info_note(
                     f"{len(rows)} variables ranked on {ranking['n']:,} {ranking['subset']} "
                     f"rows{cached}; {ranking['n_bins']} "
                     f"{'equal-weight' if ranking.get('weighted') else 'equal-mass'} bins for "
                     "numeric variables, "
                     f"{test}. {found} With many variables some small p-values arise by chance; a "
                     "p-value tests whether the gap varies along the variable, so a "
                     "miscalibration the same everywhere (the Overview measures it) gives "
                     "large ones.")])


def _detail_note(detail: dict[str, Any]) -> html.Div:
    where = (f"v* = {format_value(detail['v_star'])}" if detail["kind"] == "numeric"
             else f"category {format_value(detail['v_star'])}")
    missing = (f", {detail['n_missing']:,} rows left out (missing)" if detail["n_missing"]
               else "")
    extra = (f" Curves over the variable's {RANGE_WORDS[detail['curve_range']]} (VCE(v*) is "
             "the largest gap there); the histogram shows the rows there"
             f"{' (counted once, not weighted)' if detail.get('weighted') else ''}."
             if detail["kind"] == "numeric"
             else " Categorical: one bin per category (the span and range do not apply).")
    gap = (f"largest gap VCE(v*) = {detail['vce_max']:.4f} at {where}"
           if detail["vce_max"] is not None
           else "no largest gap: the fit is less certain than one row at every point")
    return html.Div([weights_note(detail), info_note(
        f"{detail['variable']} ({detail['kind']}): n = {detail['n']:,}{missing}. "
        f"VECE = {detail['vece']:.4f}; {gap}." + extra)])


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "—"
    if low is None or high is None:
        return f"{value:.4f}"
    return f"{value:.4f} ({low:.4f}–{high:.4f})"


def _bins_table(detail: dict[str, Any]) -> html.Details | html.Div:
    """Per-category (or per-bin) sample sizes, rates and intervals behind VECE (with the
    bins' weights and Kish effective sizes on a weighted dataset)."""
    bins = detail["bins"]
    weighted = bins.get("weight") is not None
    header = html.Tr([html.Th("category" if detail["kind"] == "categorical" else "bin of v"),
                      html.Th("n"),
                      *([html.Th("weight"), html.Th("Kish n_eff")] if weighted else []),
                      html.Th("error rate (95% Wilson CI)"),
                      html.Th("predicted error (95% t CI)"),
                      html.Th("gap (error − predicted; + over-confident)")])
    rows = [html.Tr([html.Td(format_value(bins["bin"][i])), html.Td(f"{bins['n'][i]:,}"),
                     *([html.Td(f"{bins['weight'][i]:,.6g}"), html.Td(f"{bins['n_eff'][i]:,.1f}")]
                       if weighted else []),
                     html.Td(_interval(bins["error"][i], bins["error_low"][i],
                                       bins["error_high"][i])),
                     html.Td(_interval(bins["predicted_error"][i],
                                       bins["predicted_error_low"][i],
                                       bins["predicted_error_high"][i])),
                     html.Td(f"{bins['gap'][i]:+.4f}")])
            for i in range(len(bins["n"]))]
    table = html.Table([html.Thead(header), html.Tbody(rows)], className="table")
    if detail["kind"] == "categorical":
        return html.Div([html.H3("Per category"), table], id=VAR_CATEGORIES)
    shares = "equal-weight" if weighted else "equal-mass"
    return html.Details([html.Summary(f"The {len(rows)} {shares} bins behind VECE"), table],
                        className="variables-bins")
