"""Figures built from results, checked without a browser: what a reader would misread."""

from __future__ import annotations

import numpy as np

from app.ui.figures.reliability import smooth_reliability_figure


def _segments(xs: list, ys: list) -> list[tuple[list[float], list[float]]]:
    parts, x_part, y_part = [], [], []
    for x, y in zip([*xs, None], [*ys, None], strict=True):
        if x is None:
            if x_part:
                parts.append((x_part, y_part))
            x_part, y_part = [], []
        else:
            x_part.append(x)
            y_part.append(y)
    return parts


def test_smooth_band_is_drawn_only_where_the_curve_is() -> None:
    """Scores with no rows in [0.4, 0.5) and above 0.8: the curve is blank there, and the
    band is one closed outline per stretch of the curve, each holding the curve inside
    it (a band with null values would be filled against its own chord, issue 16.3)."""
    grid = np.linspace(0, 1, 101)
    density = np.where(((grid >= 0.4) & (grid < 0.5)) | (grid > 0.8), 0.0, 1.5)
    curve = 0.2 + 0.6 * grid
    diagram = {"label": "top label", "grid": grid.tolist(), "curve": curve.tolist(),
               "curve_low": (curve - 0.05).tolist(), "curve_high": (curve + 0.05).tolist(),
               "density": density.tolist(), "n": 1000, "bandwidth": 0.05, "smooth_ece": 0.01}
    figure = smooth_reliability_figure({"view": "top_label", "smooth": [diagram]})
    band = next(t for t in figure.data if t.name.startswith("95% bootstrap band"))
    line = next(t for t in figure.data if t.name.startswith("top label"))
    assert band.fill == "toself"
    segments = _segments(list(band.x), list(band.y))
    shown = density * 1000 * 0.05 >= 1
    assert len(segments) == 2
    for xs, ys in segments:
        half = len(xs) // 2
        upper_x, lower_x = xs[:half], xs[half:][::-1]
        assert upper_x == lower_x  # closed: out along the top, back along the bottom
        inside = np.isin(grid, upper_x)
        assert shown[inside].all()
        upper, lower = np.array(ys[:half]), np.array(ys[half:][::-1])
        assert np.all(lower <= curve[inside]) and np.all(curve[inside] <= upper)
    assert sum(len(xs) // 2 for xs, _ in segments) == shown.sum()
    drawn = np.array([y is not None for y in line.y])
    assert np.array_equal(drawn, shown)


def test_a_measure_skipped_on_a_large_file_keeps_its_row_with_the_reason() -> None:
    """smCE is not computed above 200,000 rows: the table says so instead of dropping it
    (issue 16.8)."""
    from app.ui.pages.overview import measures_table

    note = "not computed on 250,000 rows, above smce_max_rows=200,000"
    result = {"n": 250_000, "interval": "x", "n_bootstrap": 0, "measures": {
        "ece": {"name": "ECE", "value": 0.01, "low": 0.0, "high": 0.02, "plug_in": 0.01,
                "consistent": False, "meaning": "binned", "note": ""},
        "smooth_calibration_error": {"name": "smCE", "value": None, "low": None,
                                     "high": None, "plug_in": None, "consistent": True,
                                     "meaning": "Lipschitz", "note": note},
        "binary_brier": {"name": "binary Brier", "value": None, "low": None, "high": None,
                         "plug_in": None, "consistent": False, "meaning": "P(1)",
                         "note": "binary problems only"}}}
    table = next(child for child in measures_table(result, with_intervals=True).children
                 if type(child).__name__ == "Table")
    rows = {row.id: row for row in table.children[1].children}
    skipped = rows["measure-smooth_calibration_error"]
    assert [getattr(cell, "children", cell) for cell in skipped.children][:3] == [
        "smCE", "—", "—"]
    assert note in skipped.children[5].children
    assert "measure-ece" in rows
