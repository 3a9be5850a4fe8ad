"""Pieces of the Local page: its controls, results panel, summary cards, bin choices and
the table of selected rows (:mod:`app.ui.pages.local` wires them with callbacks)."""

from __future__ import annotations

import math
from typing import Any

import dash_ag_grid as dag
from dash import dcc, html

from app.services import local
from app.ui.components import grid_number, info_note, measure_card, weights_note
from app.ui.figures import empty_figure
from app.ui.figures.local import bin_label
from calibcore.local import DEFAULT_SAMPLE_SIZE

#: Component ids of this page (the shared ones are in app.ui.ids).
LOCAL_FEATURES = "local-features"
LOCAL_REDUCER = "local-reducer"
LOCAL_COMPONENTS = "local-components"
LOCAL_EMBEDDING_COLUMNS = "local-embedding-columns"
LOCAL_EMBEDDING_CONTROL = "local-embedding-control"
LOCAL_GAMMA = "local-gamma"  # log10 of the bandwidth
LOCAL_GAMMA_TEXT = "local-gamma-text"
LOCAL_GAMMA_HINT = "local-gamma-hint"
LOCAL_COST = "local-cost"  # the cost estimate of the chosen representation
LOCAL_VIEW_NOTE = "local-view-note"
LOCAL_BINS = "local-bins"
LOCAL_SUBSET = "local-subset"
LOCAL_SAMPLE = "local-sample"
LOCAL_RUN = "local-run"
LOCAL_CANCEL = "local-cancel"
LOCAL_PROGRESS = "local-progress"
LOCAL_STATUS = "local-status"
LOCAL_JOB = "local-job"
LOCAL_POLL = "local-poll"
LOCAL_RESULT = "local-result"  # dcc.Store: the parameters and headline numbers shown
LOCAL_CURVE = "local-curve"  # dcc.Store: the MLCE curve shown
LOCAL_RESULTS = "local-results"
LOCAL_SUMMARY = "local-summary"
LOCAL_CARDS = "local-cards"
LOCAL_COLOUR = "local-colour"
LOCAL_BIN = "local-bin"
LOCAL_MAP = "local-map"
LOCAL_CDF = "local-cdf"
LOCAL_CURVES = "local-curves"
LOCAL_SELECTION = "local-selection"
LOCAL_SELECTION_TABLE = "local-selection-table"

HIDDEN = {"display": "none"}
_REDUCERS = [{"label": "PCA", "value": "pca"}, {"label": "UMAP", "value": "umap"},
             {"label": "t-SNE (slow beyond a few thousand rows: lower the sample)",
              "value": "tsne"},
             {"label": "none (standardized, encoded features)", "value": "none"},
             {"label": "embedding columns (given)", "value": "columns"}]
_GAMMA_MARKS = {-3: "0.001", -2: "0.01", -1: "0.1", 0: "1", 1: "10", 2: "100"}
#: Rows listed for a selection (the largest LCE first). A paged grid keeps one page of
#: them in the document; as a plain table every row is eight Dash components that each
#: later store update walks (200 rows held the browser for 4 s of CPU).
SELECTION_ROWS = 2_000
_SELECTION_COLUMNS: list[dict[str, Any]] = [
    {"field": "id", "headerName": "id", "minWidth": 90},
    {"field": "row", "headerName": "row", "type": "numericColumn",
     "valueFormatter": grid_number(",")},
    {"field": "label", "headerName": "label"},
    {"field": "prediction", "headerName": "prediction"},
    {"field": "confidence", "headerName": "confidence", "type": "numericColumn",
     "valueFormatter": grid_number(".3f")},
    {"field": "lce", "headerName": "LCE", "type": "numericColumn", "sort": "desc",
     "valueFormatter": grid_number(".4f")},
    {"field": "signed_lce", "headerName": "signed LCE", "type": "numericColumn",
     "headerTooltip": "+ over-confident, − under-confident",
     "valueFormatter": grid_number("+.4f")},
]


def _control(label: str, child: Any, component_id: str | None = None, wide: bool = False,
             **kwargs: Any) -> html.Div:
    return html.Div([html.Label(label, className="field-label", htmlFor=component_id), child],
                    className="control control-wide" if wide else "control", **kwargs)


def _number(component_id: str, value: float, **limits: Any) -> dcc.Input:
    return dcc.Input(id=component_id, type="number", value=value, debounce=True,
                     className="text-input", **limits)


def controls() -> html.Div:
    """Features, representation, bandwidth (log slider), bins, rows, reducer sample."""
    return html.Div([
        _control("Feature columns", dcc.Dropdown(id=LOCAL_FEATURES, multi=True,
                                                 placeholder="all feature columns"),
                 LOCAL_FEATURES, wide=True),
        _control("Representation φ", dcc.Dropdown(id=LOCAL_REDUCER, options=_REDUCERS,
                                                  value="pca", clearable=False),
                 LOCAL_REDUCER),
        _control("Dimensions (PCA: k; t-SNE, UMAP: 2 or 3)",
                 _number(LOCAL_COMPONENTS, 2, min=1, max=200, step=1),
                 LOCAL_COMPONENTS),
        _control("Embedding columns (numeric)",
                 dcc.Dropdown(id=LOCAL_EMBEDDING_COLUMNS, multi=True,
                              placeholder="choose 2 or 3 columns"),
                 LOCAL_EMBEDDING_COLUMNS, wide=True, id=LOCAL_EMBEDDING_CONTROL,
                 style=HIDDEN),
        html.Div([html.Label([html.Span("Kernel bandwidth "),
                              html.Span("γ = 0.4", id=LOCAL_GAMMA_TEXT,
                                        className="local-gamma-value")],
                             className="field-label", htmlFor=LOCAL_GAMMA),
                  dcc.Slider(id=LOCAL_GAMMA, min=-3, max=2, step=0.01,
                             value=math.log10(local.DEFAULT_GAMMA_FEATURES),
                             marks=_GAMMA_MARKS, updatemode="mouseup",
                             allow_direct_input=False),
                  html.Div(gamma_hint(local.DEFAULT_GAMMA_FEATURES), id=LOCAL_GAMMA_HINT,
                           className="field-hint")],
                 className="control control-wide local-gamma"),
        _control("Confidence bins", _number(LOCAL_BINS, 15, min=1, max=100, step=1),
                 LOCAL_BINS),
        _control("Rows", dcc.RadioItems(id=LOCAL_SUBSET, value="all", className="radio",
                                        options=[{"label": s, "value": s}
                                                 for s in ("all", "calibration", "test")])),
        _control("Fit the reducer on at most (rows, seeded)",
                 _number(LOCAL_SAMPLE, DEFAULT_SAMPLE_SIZE, min=10, step=1),
                 LOCAL_SAMPLE),
    ], className="controls")


def results_panel() -> html.Div:
    """Display choices, the map beside the CDF, the selection table and the curves."""
    return html.Div([
        html.Div(id=LOCAL_SUMMARY),
        html.Div([
            _control("Colour", dcc.RadioItems(
                id=LOCAL_COLOUR, value="lce", className="radio",
                options=[{"label": "LCE", "value": "lce"},
                         {"label": "signed LCE (over- vs under-confident)",
                          "value": "signed"}])),
            _control("Confidence bin", dcc.Dropdown(id=LOCAL_BIN, value="all",
                                                    clearable=False), LOCAL_BIN,
                     wide=True),
        ], className="controls local-display"),
        html.Div([
            dcc.Graph(id=LOCAL_MAP, figure=empty_figure("Computing…"),
                      config={"displaylogo": False}, className="local-graph"),
            dcc.Graph(id=LOCAL_CDF, figure=empty_figure("Computing…"),
                      config={"displaylogo": False}, className="local-graph"),
        ], className="local-graphs"),
        html.H3("Rows in the selected region"),
        html.Div(info_note("Drag a box (or lasso) on the map, or click a point, to list rows."),
                 id=LOCAL_SELECTION),
        dcc.Graph(id=LOCAL_CURVES, figure=empty_figure("The MLCE curve follows the "
                                                           "landscape."),
                  config={"displaylogo": False}, className="local-graph"),
    ], id=LOCAL_RESULTS, style=HIDDEN)


def bin_options(result: dict[str, Any]) -> list[dict[str, str]]:
    """"All bins" and each non-empty confidence bin with its n, gap and mean LCE."""
    options = [{"label": f"all bins (n = {result['n_rows']:,})", "value": "all"}]
    for summary in result["bins"]:
        if summary["count"]:
            options.append({
                "label": f"bin {summary['index'] + 1} {bin_label(summary)} · n = "
                         f"{summary['count']:,} · |conf − acc| = {summary['gap']:.3f} · mean "
                         f"LCE {summary['mean_lce']:.3f}",
                "value": str(summary["index"])})
    return options


def gamma_hint(default: float) -> str:
    """Under the slider: γ stays as set when the representation changes; its default."""
    return f"Kept when φ changes; the default for this φ is {default:g}."


def representation_words(result: dict[str, Any]) -> str:
    """The kernel space φ of a landscape in a few words ("PCA(2)", "2-D UMAP", ...)."""
    params, dimension = result["params"], result["dimension"]
    return {"pca": f"PCA({dimension})", "umap": f"{dimension}-D UMAP",
            "tsne": f"{dimension}-D t-SNE", "none": f"standardized features (d = {dimension})",
            "columns": "embedding columns"}.get(params["reducer"], params["reducer"])


#: What the MLCE card says about the MLCE's variance (it has no interval).
MLCE_VARIANCE = ("MLCE is a maximum over rows: no interval is given, it is biased upward and "
                 "varies from sample to sample, more so at small γ and on fewer rows; it "
                 "depends on γ and φ, so compare MLCEs only at the same γ, φ and rows.")


def summary_panel(result: dict[str, Any]) -> html.Div:
    """Headline cards (MLCE, mean LCE, their gamma -> infinity limits, gamma) and notes."""
    n = f"n = {result['n_rows']:,} rows"
    weighted = bool(result.get("weighted"))
    mean_words = f"{n}, weighted by the row weights" if weighted else n
    worst = result["worst_row"]
    where = f"id {worst['id']}" if worst["id"] is not None else f"row {worst['row']:,}"
    cards = html.Div([
        measure_card("MLCE", result["mlce"],
                     f"γ = {result['params']['gamma']:g}, φ = {representation_words(result)}; "
                     f"{n}; at {where}",
                     title="largest LCE over rows (Luo et al. 2022, eq. 5). " + MLCE_VARIANCE),
        measure_card("Mean LCE", result["mean_lce"], mean_words),
        measure_card("MCE", result["mce"], "γ → ∞ limit of the MLCE",
                     title="largest |conf − acc| over the confidence bins"),
        measure_card("ECE", result["ece"], "γ → ∞ limit of the mean LCE",
                     title=("weight-weighted" if weighted else "count-weighted")
                     + " mean |conf − acc| over the confidence bins"),
        measure_card("Bandwidth γ", f"{result['params']['gamma']:g}",
                     f"d = {result['dimension']}, {result['params']['n_bins']} bins"),
    ], className="cards", id=LOCAL_CARDS)
    notes = html.Details([html.Summary("What was done"),
                          html.Ul([html.Li(note) for note in result["notes"]])],
                         className="local-notes")
    return html.Div([weights_note(result), cards,
                     html.P(MLCE_VARIANCE, className="card-note local-mlce-note"), notes])


def selection_table(data: dict[str, Any] | None) -> html.Div:
    """The rows of the map points in a selection or click, the largest LCE first."""
    points = [p for p in (data or {}).get("points", []) if p.get("curveNumber") == 0
              and p.get("customdata")]
    if not points:
        return info_note("No rows selected. Drag a box (or lasso) on the map, or click a point.")
    rows = {int(p["customdata"][0]): p["customdata"] for p in points}
    ordered = sorted(rows.values(), key=lambda values: -float(values[5]))
    listed = [{"id": str(v[1]), "row": int(v[0]), "label": str(v[2]),
               "prediction": str(v[3]), "confidence": float(v[4]), "lce": float(v[5]),
               "signed_lce": float(v[6])} for v in ordered[:SELECTION_ROWS]]
    mean = sum(float(v[5]) for v in ordered) / len(ordered)
    caption = (f"{len(ordered):,} rows selected (of those drawn on the map); mean LCE "
               f"{mean:.4f}" + (f"; the {SELECTION_ROWS:,} with the largest LCE listed"
                                if len(ordered) > SELECTION_ROWS else ""))
    grid = dag.AgGrid(
        id=LOCAL_SELECTION_TABLE, rowData=listed, columnDefs=_SELECTION_COLUMNS,
        defaultColDef={"sortable": True, "resizable": True, "flex": 1, "minWidth": 80},
        dashGridOptions={"domLayout": "autoHeight", "pagination": True,
                         "paginationPageSize": 10, "paginationPageSizeSelector": False},
        className="ag-theme-alpine")
    return html.Div([html.Div(caption, className="caption local-caption"),
                     html.Div(grid, className="local-table")])
