"""Data page: upload a file (streamed, with progress), confirm its column roles."""

from __future__ import annotations

import asyncio
from typing import Any

import dash_ag_grid as dag
from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update

from app.services.context import Services
from app.services.datasets import NotFound, rows_to_leave_out
from app.services.roles import RoleOverrides, choose_roles
from app.ui import ids
from app.ui.components import error_note, info_note, progress_bar
from calibcore.exceptions import CalibrationInputError

#: Component ids of this page (the shared ones are in app.ui.ids).
UPLOAD_DROPZONE = "upload-dropzone"  # also used by assets/upload.js
UPLOAD_BROWSE = "upload-browse"  # also used by assets/upload.js
UPLOAD_PROGRESS = "upload-progress"  # also used by assets/upload.js
UPLOAD_PROGRESS_BAR = "upload-progress-bar"  # also used by assets/upload.js
UPLOAD_RESPONSE = "upload-response"  # set by assets/upload.js via dash_clientside.set_props
UPLOAD_STATUS = "upload-status"
ROLES_PANEL = "roles-panel"
ROLE_LABEL = "role-label"
ROLE_PROBABILITIES = "role-probabilities"
ROLE_FEATURES = "role-features"
ROLE_SPLIT = "role-split"
ROLE_TIME = "role-time"
ROLE_MODELS = "role-models"
ROLE_ID = "role-id"
ROLE_WEIGHT = "role-weight"  # row weights (survey, importance, downsampling)
ROLE_NEGATIVE_RATE = "role-negative-rate"  # fraction of negatives a sampled log kept
ROLE_OPTIONS = "role-options"
ROLE_DROP_MISSING = "role-drop-missing"  # leave out the rows missing a label or probability
ROLE_DROP_MISSING_FIELD = "role-drop-missing-field"
ROLE_NAME = "role-name"
ROLE_MESSAGES = "role-messages"  # what still stops the dataset, and the inference's guesses
ROLE_ASSIGNED = "role-assigned"  # columns holding a role other than feature, before a change
PREVIEW_TABLE = "preview-table"
CONFIRM_BUTTON = "confirm-roles"
CONFIRM_STATUS = "confirm-status"
DATASET_LIST = "dataset-list"
DELETE_DATASET = "delete-dataset"


def layout(services: Services) -> html.Div:
    datasets = services.datasets.list()
    return html.Div([
        html.H1("Upload predictions"),
        html.P("A CSV (comma, semicolon or tab separated; gzip allowed) or Parquet file with one "
               "row per example: the true label, the predicted class probabilities, and any "
               "features. Roles are inferred; you confirm them next."),
        html.Div([
            html.Div("Drop a CSV or Parquet file here", className="dropzone-title"),
            html.Div("or", className="dropzone-or"),
            html.Button("choose a file", id=UPLOAD_BROWSE, className="button button-secondary",
                        title="CSV, TSV, gzip-compressed CSV or Parquet"),
        ], id=UPLOAD_DROPZONE, className="dropzone"),
        progress_bar(UPLOAD_PROGRESS_BAR, UPLOAD_PROGRESS),
        dcc.Store(id=UPLOAD_RESPONSE),
        html.Div(id=UPLOAD_STATUS),
        html.Div(id=ROLES_PANEL),
        html.H2("Stored datasets"),
        html.Div(_dataset_list(datasets), id=DATASET_LIST),
    ])


def _dataset_list(datasets: list[dict[str, Any]]) -> Any:
    if not datasets:
        return info_note("No datasets yet: upload one above.")
    rows = [html.Tr([
        html.Td(dcc.Link(d["name"], href=f"/overview?dataset={d['id']}")),
        html.Td(f"{d['n_rows']:,}" + (f" ({d['n_left_out']:,} left out)"
                                      if d.get("n_left_out") else "")),
        html.Td(d["n_classes"]),
        html.Td("calibration/test split" if d.get("n_test") else "no split (cross-fitting)"),
        html.Td(d["created"][:19].replace("T", " ")),
        html.Td(dcc.ConfirmDialogProvider(
            html.Button("Delete", className="button button-secondary button-small",
                        title=f"delete {d['name']} and everything computed from it"),
            id={"type": DELETE_DATASET, "index": d["id"]},
            message=f"Delete the dataset {d['name']!r} ({d['n_rows']:,} rows) and every "
                    "result, recalibration and download computed from it? This cannot be "
                    "undone.")),
    ]) for d in reversed(datasets)]
    header = html.Tr([html.Th(h) for h in ("name", "rows", "classes", "split", "created (UTC)",
                                           "")])
    return html.Table([html.Thead(header), html.Tbody(rows)], className="table")


def _roles_editor(response: dict[str, Any]) -> html.Div:
    inferred = response["inferred"]
    columns = response["columns"]
    options = [{"label": c, "value": c} for c in columns]
    messages = _role_messages(inferred["problems"], inferred, inferred["label"],
                              inferred["probabilities"])
    assigned = [c for c in (inferred["label"], *inferred["probabilities"], inferred["split"],
                            inferred["id"], inferred.get("time"), inferred.get("weight"))
                if c is not None]
    notes = [info_note(w) for w in response.get("warnings", [])]
    n_missing, exact = rows_to_leave_out(response, inferred["label"], inferred["probabilities"])
    models = inferred.get("models") or []
    if models:
        notes.append(info_note(f"{len(models)} models' probabilities found (columns grouped "
                               "by prefix). The first is the probabilities below; the Compare "
                               "page compares the ticked ones on the same rows."))
    preview = dag.AgGrid(
        id=PREVIEW_TABLE, rowData=response["preview"],
        # column names are the file's: read as plain keys, never as paths or code
        columnDefs=[{"headerName": c, "field": c} for c in columns],
        defaultColDef={"resizable": True, "minWidth": 110, "sortable": False},
        dashGridOptions={"domLayout": "autoHeight", "suppressFieldDotNotation": True},
        columnSize="autoSize", className="ag-theme-alpine")
    return html.Div([
        html.H2(f"Confirm the column roles of {response['filename']} "
                f"({response['n_rows']:,} rows, {len(columns)} columns)"),
        html.Div(messages, id=ROLE_MESSAGES),
        dcc.Store(id=ROLE_ASSIGNED, data=assigned),
        *notes,
        html.Div([
            _field("Label (true class)", dcc.Dropdown(id=ROLE_LABEL, options=options,
                                                      value=inferred.get("label"))),
            _field("Probability columns (one per class, or P(positive) for binary)",
                   dcc.Dropdown(id=ROLE_PROBABILITIES, options=options, multi=True,
                                value=inferred.get("probabilities"))),
            _field("Split (calibration / test), optional",
                   dcc.Dropdown(id=ROLE_SPLIT, options=options, value=inferred.get("split"),
                                placeholder="none: cross-fitting")),
            _field("Id, optional", dcc.Dropdown(id=ROLE_ID, options=options,
                                                value=inferred.get("id"), placeholder="none")),
            _field("Time (dates or an ordered number), optional",
                   dcc.Dropdown(id=ROLE_TIME, options=options, value=inferred.get("time"),
                                placeholder="none: no calibration timeline")),
            _field("Row weights (non-negative), optional",
                   dcc.Dropdown(id=ROLE_WEIGHT, options=options, value=inferred.get("weight"),
                                placeholder="none: every row counts once")),
            _field("Negatives kept (a log that kept this fraction of its negatives), optional",
                   dcc.Input(id=ROLE_NEGATIVE_RATE, type="number", min=0, max=1, step="any",
                             placeholder="e.g. 0.1: negatives weigh 10",
                             className="text-input")),
            _field("Features", dcc.Dropdown(id=ROLE_FEATURES, options=options, multi=True,
                                            value=inferred.get("features"))),
            html.Div(_field("Models to compare (untick a wrongly grouped one)", dcc.Checklist(
                id=ROLE_MODELS, className="checklist",
                options=[{"label": f" {name}: {', '.join(group)}", "value": name}
                         for name, group in models],
                value=[name for name, _ in models])), hidden=not models),
            _field("Name", dcc.Input(id=ROLE_NAME, value=response["filename"], type="text",
                                     className="text-input")),
            dcc.Checklist(id=ROLE_OPTIONS, options=[
                {"label": " probability columns hold logits", "value": "logits"},
                {"label": " renormalize rows that do not sum to 1", "value": "renormalize"},
                {"label": " no labels: an unlabeled batch (for the calibration-support shift "
                          "check)", "value": "unlabeled"}],
                value=[], className="checklist"),
            html.Div(dcc.Checklist(id=ROLE_DROP_MISSING, options=_drop_missing_options(
                n_missing, exact), value=[], className="checklist"),
                id=ROLE_DROP_MISSING_FIELD, hidden=not n_missing,
                title="Rows missing only a feature value stay: each diagnostic drops or "
                      "imputes those and says so."),
        ], className="roles-grid"),
        html.Button("Create dataset", id=CONFIRM_BUTTON, className="button"),
        html.Div(id=CONFIRM_STATUS),
        html.H3("First rows"),
        preview,
    ], className="panel")


def _role_messages(problems: list[str] | tuple[str, ...], inferred: dict[str, Any],
                   label: str | None, probabilities: list[str] | None) -> list[html.Div]:
    """The problems of the current choice, and the inference's guesses while they stand."""
    guesses_stand = (label, list(probabilities or [])) == (inferred["label"],
                                                           inferred["probabilities"])
    return [*(error_note(p) for p in problems),
            *(info_note(n) for n in (inferred.get("notes", []) if guesses_stand else []))]


def _drop_missing_options(n_rows: int, exact: bool) -> list[dict[str, str]]:
    """The tick that leaves out the rows with a missing label or probability."""
    if exact:
        rows = f"the {n_rows:,} row{'s' if n_rows != 1 else ''}"
    else:
        rows = f"the rows (at most {n_rows:,})"
    return [{"label": f" leave out {rows} with a missing label or probability",
             "value": "drop_missing"}]


def _ticked_models(models: list[list[Any]], ticked: list[str] | None
                   ) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """The models the user kept ticked (none below two); None when none were found."""
    if not models:
        return None
    kept = tuple((name, tuple(group)) for name, group in models if name in (ticked or []))
    return kept if len(kept) >= 2 else ()


def _field(label: str, control: Any) -> html.Div:
    return html.Div([html.Label(label, className="field-label"), control], className="field")


def register(app: Dash, services: Services) -> None:
    @app.callback(Output(UPLOAD_STATUS, "children"), Output(ROLES_PANEL, "children"),
                  Input(UPLOAD_RESPONSE, "data"), prevent_initial_call=True)
    def show_upload(response: dict[str, Any] | None) -> tuple[Any, Any]:
        if not response:
            return no_update, no_update
        body = response.get("body") or {}
        if response.get("status") != 201:
            message = body.get("error", {}).get("message", "the upload failed.")
            return error_note(f"Upload rejected: {message}"), None
        return info_note(f"Uploaded {body['filename']}: {body['n_rows']:,} rows. Check the "
                         "roles below, then create the dataset."), _roles_editor(body)

    @app.callback(Output(ROLE_MESSAGES, "children"), Output(ROLE_FEATURES, "value"),
                  Output(ROLE_ASSIGNED, "data"), Output(ROLE_DROP_MISSING, "options"),
                  Output(ROLE_DROP_MISSING_FIELD, "hidden"),
                  Input(ROLE_LABEL, "value"), Input(ROLE_PROBABILITIES, "value"),
                  Input(ROLE_SPLIT, "value"), Input(ROLE_ID, "value"),
                  Input(ROLE_TIME, "value"), Input(ROLE_WEIGHT, "value"),
                  Input(ROLE_OPTIONS, "value"), State(ROLE_FEATURES, "value"),
                  State(ROLE_ASSIGNED, "data"), State(UPLOAD_RESPONSE, "data"),
                  prevent_initial_call=True)
    def change_role(label: str | None, probabilities: list[str] | None, split: str | None,
                    id_column: str | None, time: str | None, weight: str | None,
                    options: list[str] | None,
                    features: list[str] | None, assigned: list[str] | None,
                    response: dict[str, Any] | None) -> tuple[Any, ...]:
        """A role choice updates the banners, takes the column out of the features and
        counts the rows a missing label or probability would leave out."""
        if not response:
            return (no_update,) * 5
        body = response["body"]
        unlabeled = "unlabeled" in (options or [])
        choice = choose_roles(body["columns"], features or [], assigned or [], label=label,
                              probabilities=probabilities or [], split=split,
                              id_column=id_column, unlabeled=unlabeled, time=time,
                              weight=weight)
        n_missing, exact = rows_to_leave_out(body, None if unlabeled else label,
                                             probabilities)
        return (_role_messages(choice.problems, body["inferred"], label, probabilities),
                list(choice.features), list(choice.assigned),
                _drop_missing_options(n_missing, exact), not n_missing)

    @app.callback(Output(DATASET_LIST, "children"),
                  Output(ids.URL, "href", allow_duplicate=True),
                  Input({"type": DELETE_DATASET, "index": ALL}, "submit_n_clicks"),
                  prevent_initial_call=True)
    async def delete(clicks: list[int | None]) -> tuple[Any, Any]:
        """Delete the confirmed dataset, then list the rest (and refresh the picker)."""
        chosen = ctx.triggered_id
        if not isinstance(chosen, dict) or not any(clicks):
            return no_update, no_update
        try:
            await asyncio.to_thread(services.datasets.delete, chosen["index"])
        except NotFound:
            pass  # deleted meanwhile (another tab): the list below says what is left
        listed = await asyncio.to_thread(services.datasets.list)
        return _dataset_list(listed), "/"

    @app.callback(Output(CONFIRM_STATUS, "children"), Output(ids.URL, "href"),
                  Input(CONFIRM_BUTTON, "n_clicks"),
                  State(UPLOAD_RESPONSE, "data"), State(ROLE_LABEL, "value"),
                  State(ROLE_PROBABILITIES, "value"), State(ROLE_SPLIT, "value"),
                  State(ROLE_ID, "value"), State(ROLE_TIME, "value"),
                  State(ROLE_WEIGHT, "value"), State(ROLE_NEGATIVE_RATE, "value"),
                  State(ROLE_MODELS, "value"), State(ROLE_FEATURES, "value"),
                  State(ROLE_OPTIONS, "value"), State(ROLE_DROP_MISSING, "value"),
                  State(ROLE_NAME, "value"), prevent_initial_call=True)
    async def confirm(clicks: int | None, response: dict[str, Any] | None, label: str | None,
                      probabilities: list[str] | None, split: str | None,
                      id_column: str | None, time: str | None, weight: str | None,
                      negative_rate: float | None, ticked: list[str] | None,
                      features: list[str] | None,
                      options: list[str] | None, drop_missing: list[str] | None,
                      name: str | None) -> tuple[Any, Any]:
        if not clicks or not response:
            return no_update, no_update
        options = options or []
        overrides = RoleOverrides(
            label=label, probabilities=tuple(probabilities or ()) or None,
            features=tuple(features or ()), split=split, id=id_column,
            no_split=split is None, no_id=id_column is None, time=time, no_time=time is None,
            models=_ticked_models(response["body"]["inferred"].get("models") or [], ticked),
            logits="logits" in options, renormalize="renormalize" in options,
            unlabeled="unlabeled" in options, drop_missing=bool(drop_missing),
            weight=weight, no_weight=weight is None,
            negative_rate=None if negative_rate in (None, "") else float(negative_rate))
        try:
            summary = await asyncio.to_thread(services.datasets.create_from_upload,
                                              response["body"]["upload_id"], overrides, name)
        except (CalibrationInputError, NotFound) as exc:
            hint = (" Tick “leave out the rows with a missing label or probability” above to "
                    "use the others." if getattr(exc, "code", None) == "missing_values"
                    and not drop_missing else "")
            return error_note(f"Cannot create the dataset: {exc}{hint}"), no_update
        return info_note("Dataset created."), f"/overview?dataset={summary['id']}"
