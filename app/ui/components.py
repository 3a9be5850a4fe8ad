"""Small reusable pieces of the UI: cards, progress bars, notes."""

from __future__ import annotations

from typing import Any

from dash import html


def grid_number(spec: str) -> dict[str, str]:
    """A dash-ag-grid value formatter: the cell's number as d3 formats it in the browser
    (``spec``: ``".4f"``, ``","``, ``"+.4f"``, ...), empty where there is no value."""
    return {"function": f"params.value == null ? '' : d3.format('{spec}')(params.value)"}


def measure_card(label: str, value: float | int | str | None, note: str = "",
                 interval: tuple[float | None, float | None] | None = None,
                 title: str = "") -> html.Div:
    """A labelled number with its sample size or interval underneath."""
    if isinstance(value, float):
        shown = f"{value:.4f}"
    elif isinstance(value, int):
        shown = f"{value:,}"
    else:
        shown = "—" if value is None else str(value)
    lines: list[Any] = [html.Div(label, className="card-label"),
                        html.Div(shown, className="card-value")]
    if interval is not None and None not in interval:
        lines.append(html.Div(f"95% CI {interval[0]:.4f}–{interval[1]:.4f}",
                              className="card-interval"))
    if note:
        lines.append(html.Div(note, className="card-note"))
    return html.Div(lines, className="card", title=title)


def progress_bar(bar_id: str, wrapper_id: str | None = None, *, fraction: float = 0.0,
                 text: str = "", visible: bool = False) -> html.Div:
    """A horizontal progress bar whose inner width is the fraction done."""
    return html.Div(
        [html.Div(id=bar_id, className="progress-fill", style={"width": f"{fraction:.0%}"}),
         html.Span(text, className="progress-text")],
        id=wrapper_id or f"{bar_id}-wrapper", className="progress",
        style={} if visible else {"display": "none"})


def error_note(message: str) -> html.Div:
    return html.Div(message, className="note note-error", role="alert")


def info_note(message: str) -> html.Div:
    return html.Div(message, className="note note-info")


def weights_note(result: dict[str, Any] | None) -> html.Div | None:
    """What a diagnostic says about the dataset's row weights: "weights are not applied
    here yet" where it does not take them, or the weighted caption where it does (the
    ``weights_note`` of its result, :mod:`app.services.weighting`); None without one."""
    note = (result or {}).get("weights_note")
    if not note:
        return None
    unweighted = not (result or {}).get("weighted")
    return html.Div(f"Row weights: {note}.", className="note note-warning weights-note"
                    if unweighted else "note note-info weights-note")


def control(label: str, component_id: str, *children: Any, wide: bool = False,
            note: str = "") -> html.Div:
    """A labelled control of a page's settings panel: the label names ``component_id``
    (the first of ``children``), an optional note goes underneath."""
    return html.Div([html.Label(label, className="field-label", htmlFor=component_id),
                     *children, *([html.Div(note, className="card-note")] if note else [])],
                    className="control control-wide" if wide else "control")
