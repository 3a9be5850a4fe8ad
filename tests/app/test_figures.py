"""Figures built from results, checked without a browser: what a reader would misread."""

from __future__ import annotations

import numpy as np
import pytest

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
    it (a band with null values would be filled against its own chord)."""
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
    """smCE is not computed above 200,000 rows: the table says so instead of dropping it."""
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


def test_overlaid_reliability_draws_the_best_two_and_the_rest_on_demand() -> None:
    """With many methods the overlaid curves tangle; the uncalibrated and the
    best two by held-out NLL are drawn, the others are in the legend only."""
    from app.ui.figures.recalibration import overlaid_reliability_figure

    diagram = {"count": [5, 5], "mean_score": [0.6, 0.9], "observed": [0.55, 0.92],
               "observed_low": [0.4, 0.8], "observed_high": [0.7, 0.99]}
    nll = {"uncalibrated": 0.50, "platt": 0.40, "beta": 0.38, "isotonic": 0.45,
           "swc": 0.39, "lece": 0.47}
    comparison = {"n": 10, "rows": [
        {"id": name, "name": name, "method": None if name == "uncalibrated" else name,
         "values": {"nll": {"value": value}}} for name, value in nll.items()],
        "reliability": [{"id": name, "name": name, "diagram": diagram} for name in nll]}
    figure = overlaid_reliability_figure(comparison)
    visible = {trace.name: trace.visible for trace in figure.data[1:]}
    assert visible == {"uncalibrated": None, "platt": "legendonly", "beta": None,
                       "isotonic": "legendonly", "swc": None, "lece": "legendonly"}
    assert "other 3" in figure.layout.title.text


def test_a_few_methods_are_all_drawn() -> None:
    from app.ui.figures.recalibration import overlaid_reliability_figure

    diagram = {"count": [5], "mean_score": [0.7], "observed": [0.6], "observed_low": [0.4],
               "observed_high": [0.8]}
    names = ("uncalibrated", "platt", "beta", "swc")
    comparison = {"n": 5, "rows": [{"id": n, "name": n, "method": None if i == 0 else n,
                                    "values": {"nll": {"value": 0.5 - i / 10}}}
                                   for i, n in enumerate(names)],
                  "reliability": [{"id": n, "name": n, "diagram": diagram} for n in names]}
    figure = overlaid_reliability_figure(comparison)
    assert all(trace.visible is None for trace in figure.data)


def test_the_overlaid_comparison_draws_the_positive_class_of_binary_data() -> None:
    """Binary comparisons carry positive-class diagrams: that view's axes name the class and
    span [0, 1]; without them (more classes) the top-label view is drawn whatever is asked."""
    from app.ui.figures.recalibration import comparison_views, overlaid_reliability_figure

    top = {"count": [4, 6], "mean_score": [0.6, 0.9], "observed": [0.5, 0.9],
           "observed_low": [0.2, 0.6], "observed_high": [0.8, 1.0]}
    positive = {"count": [7, 3], "mean_score": [0.1, 0.8], "observed": [0.0, 1.0],
                "observed_low": [0.0, 0.4], "observed_high": [0.4, 1.0]}
    names = ("uncalibrated", "platt")
    comparison = {"n": 10, "positive_class": "default", "rows": [
        {"id": n, "name": n, "method": None if i == 0 else n,
         "values": {"nll": {"value": 0.5 - i / 10}}} for i, n in enumerate(names)],
        "reliability": [{"id": n, "name": n, "diagram": top} for n in names],
        "positive_reliability": [{"id": n, "name": n, "diagram": positive} for n in names]}
    assert comparison_views(comparison) == ["top_label", "positive"]
    figure = overlaid_reliability_figure(comparison, "positive")
    assert figure.layout.xaxis.title.text == "P(y = default) (predicted probability)"
    assert figure.layout.yaxis.title.text == "frequency of y = default (observed fraction)"
    assert figure.layout.xaxis.range[0] == 0.0 and "positive class default" in \
        figure.layout.title.text
    assert [round(x, 3) for x in figure.data[1].x] == [0.098, 0.798]  # offset of its place
    assert list(figure.data[2].y) == [0.0, 1.0]
    top_figure = overlaid_reliability_figure(comparison, "top_label")
    assert top_figure.layout.xaxis.title.text == "confidence (predicted probability)"
    assert top_figure.layout.xaxis.range[0] == pytest.approx(0.55)  # below its lowest bin
    del comparison["positive_reliability"]
    assert comparison_views(comparison) == ["top_label"]
    assert overlaid_reliability_figure(comparison, "positive").layout.xaxis.title.text == \
        "confidence (predicted probability)"


def test_the_hh_map_hover_names_ids_only_when_the_data_have_them() -> None:
    from app.ui.figures.heterogeneity import hh_map_figure

    result = {"n_evaluated": 2, "mean_hh": 0.1,
              "map": {"background": {"x": [], "y": [], "n_other": 0}},
              "rows": {"row": [3, 8], "n_neighbours": [40, 41], "confidence": [0.7, 0.9],
                       "hh": [0.1, 0.2], "x": [0.0, 1.0], "y": [1.0, 0.0], "id": [None, None]}}
    trace = hh_map_figure(result).data[-1]
    assert "(id" not in "".join(trace.customdata[:, 3]) and "None" not in str(trace.customdata)
    result["rows"]["id"] = ["a-17", 42]
    assert list(hh_map_figure(result).data[-1].customdata[:, 3]) == [" (id a-17)", " (id 42)"]


def test_a_variable_band_is_one_outline_per_stretch_of_points_with_both_edges() -> None:
    """The variable curves' bands are closed outlines (fill "toself"): a point without a
    band edge (None from the API, e.g. a NaN band where L = I) splits it, so no fill spans
    the gap (as the smooth reliability band)."""
    from app.ui.figures.variables import curves_figure

    x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    error = [0.2, 0.25, 0.3, 0.3, 0.3, 0.35]
    low = [0.1, 0.15, None, None, 0.2, 0.25]
    high = [0.3, 0.35, None, None, 0.4, 0.45]
    detail = {"variable": "days", "n": 100, "curves": {
        "x": x, "error": error, "error_low": low, "error_high": high,
        "predicted_error": error, "predicted_error_low": low, "predicted_error_high": high,
        "histogram_edges": [0.0, 2.5, 5.0], "histogram_counts": [60, 40], "v_star": 5.0,
        "vce_max": 0.05, "exact": True, "span": 0.8, "curve_range": "5-95"}}
    band = next(t for t in curves_figure(detail).data if t.name == "95% band (error rate)")
    assert band.fill == "toself"
    assert list(band.x) == [0.0, 1.0, 1.0, 0.0, None, 4.0, 5.0, 5.0, 4.0]
    assert list(band.y[:4]) == pytest.approx([0.3, 0.35, 0.15, 0.1])


def test_variable_curves_with_points_left_out_say_so() -> None:
    """Points left out come as None: the curve breaks there and the subtitle says how many
    and why; without a largest gap there is no v* line."""
    from app.ui.figures.variables import curves_figure

    x = [0.0, 1.0, 2.0, 3.0]
    error = [0.2, None, None, 0.3]
    detail = {"variable": "days", "n": 100, "curves": {
        "x": x, "error": error, "error_low": error, "error_high": error,
        "predicted_error": error, "predicted_error_low": error,
        "predicted_error_high": error, "histogram_edges": [0.0, 1.5, 3.0],
        "histogram_counts": [60, 40], "v_star": 3.0, "vce_max": 0.0, "exact": True,
        "span": 0.8, "curve_range": "5-95"}}
    figure = curves_figure(detail)
    curve = next(t for t in figure.data if t.name == "error rate")
    assert np.isnan(curve.y[1]) and np.isnan(curve.y[2])
    assert "2 of 4 points left out" in figure.layout.title.subtitle.text
    assert figure.layout.shapes
    detail["curves"]["v_star"] = detail["curves"]["vce_max"] = None
    assert not curves_figure(detail).layout.shapes


def test_variable_curves_shade_the_gaps_with_no_rows() -> None:
    """A gap of V where the curves are not estimated is shaded (clipped to the plotted
    range), named in the legend and marked "no rows here"; its points are not counted as
    uncertain fits; a point drawn alone between gaps gets a dot."""
    from app.ui.figures.variables import _GAP_NAME, curves_figure

    x = [0.0, 30.0, 60.0, 500.0, 999.0]
    error = [0.2, 0.25, 0.3, None, 0.3]
    detail = {"variable": "days", "n": 100, "curves": {
        "x": x, "error": error, "error_low": error, "error_high": error,
        "predicted_error": error, "predicted_error_low": error,
        "predicted_error_high": error, "histogram_edges": [0.0, 500.0, 999.0],
        "histogram_counts": [90, 10], "v_star": 30.0, "vce_max": 0.05, "exact": True,
        "span": 0.8, "curve_range": "5-95", "gaps": [[60.0, 999.0], [-5.0, -1.0]]}}
    figure = curves_figure(detail)
    shaded = [shape for shape in figure.layout.shapes if shape.type == "rect"]
    assert [(shape.x0, shape.x1) for shape in shaded] == [(60.0, 999.0)] * len(shaded)
    assert len(shaded) >= 1
    assert any(t.name == _GAP_NAME for t in figure.data)
    assert [a.text for a in figure.layout.annotations].count("no rows here") == 1
    assert "left out" not in figure.layout.title.subtitle.text
    curve = next(t for t in figure.data if t.name == "error rate")
    assert list(curve.marker.size) == [0, 0, 0, 0, 7]
    detail["curves"]["gaps"] = []
    assert not any(t.name == _GAP_NAME for t in curves_figure(detail).data)
    assert "1 of 5 points left out" in curves_figure(detail).layout.title.subtitle.text
