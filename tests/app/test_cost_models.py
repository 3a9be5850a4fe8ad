"""The cost models behind every job's time estimate: fitted coefficients are used as
counted, estimates grow with the work, the display turns into a range when the fit is not
trusted within a factor of two, and every job carries its estimate."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from app.jobs import JobRunner
from app.schemas.jobs import JobResponse
from app.services.cost import CostEstimate, CostModel, cost_models, duration
from app.services.heterogeneity import HeterogeneityParams, heterogeneity_terms
from app.services.methods import MethodSpec
from app.services.recalibration_cost import recalibration_terms
from app.services.subgroups import SubgroupParams, subgroups_terms
from app.services.support import SupportParams, support_terms
from app.services.variables import RankingParams, ranking_terms
from app.ui.job_panel import cost_note, running_status
from benchmarks.fit_costs import fit
from calibcore.data import PredictionSet, build_prediction_set, infer_roles


def prediction_set(n_rows: int, n_features: int, random_state: int = 0) -> PredictionSet:
    """A seeded binary file of ``n_rows`` rows, ``n_features`` numeric features, a split."""
    rng = np.random.default_rng(random_state)
    frame = pd.DataFrame(rng.normal(size=(n_rows, n_features)),
                         columns=[f"x{j}" for j in range(n_features)])
    frame["y_prob"] = rng.uniform(0.02, 0.98, n_rows).round(3)
    frame["y_true"] = (rng.random(n_rows) < frame["y_prob"]).astype(int)
    frame["split"] = np.where(np.arange(n_rows) % 2 == 0, "calibration", "test")
    return build_prediction_set(frame, infer_roles(frame).to_roles())


def test_a_model_adds_each_counted_term_times_its_coefficient() -> None:
    model = CostModel({"fixed": 0.5, "rows": 2e-3, "forests": 0.25}, spread=1.5)
    # by hand: 0.5 + 2e-3 * 1,000 + 0.25 * 4 = 3.5; a term it does not know adds nothing
    assert model.seconds({"fixed": 1.0, "rows": 1_000, "forests": 4, "other": 9}) == \
        pytest.approx(3.5)
    estimate = model.estimate({"rows": 1_000}, "1,000 rows")
    assert estimate.seconds == pytest.approx(2.5) and estimate.spread == 1.5
    assert estimate.terms == {"rows": 1_000}


@seed(20261127)
@settings(max_examples=60, deadline=None)
@given(coefficients=st.lists(st.floats(0, 10), min_size=3, max_size=3),
       terms=st.lists(st.floats(0, 1e6), min_size=3, max_size=3),
       which=st.integers(0, 2), more=st.floats(0, 1e6))
def test_seconds_never_fall_when_a_term_grows(coefficients: list[float], terms: list[float],
                                              which: int, more: float) -> None:
    names = ["fixed", "rows", "forests"]
    model = CostModel(dict(zip(names, coefficients, strict=True)))
    counted = dict(zip(names, terms, strict=True))
    grown = {**counted, names[which]: counted[names[which]] + more}
    assert model.seconds(grown) >= model.seconds(counted)


def test_fitted_models_are_non_negative_and_name_the_terms_the_services_count() -> None:
    counted = {
        "support": support_terms(prediction_set(200, 3), SupportParams(), 3),
        "heterogeneity": heterogeneity_terms(prediction_set(200, 3), HeterogeneityParams(),
                                             3)[0],
        "recalibration": recalibration_terms(prediction_set(200, 3),
                                             [MethodSpec("swc_hh")])[0],
        "subgroups": subgroups_terms(prediction_set(200, 3), SubgroupParams(),
                                     ["x0", "x1", "x2"], 200),
        "variables": ranking_terms(prediction_set(200, 3), RankingParams()),
    }
    for kind, model in cost_models().items():
        assert model.spread >= 1.0 and all(c >= 0 for c in model.coefficients.values()), kind
        if kind in counted:
            assert set(model.coefficients) <= set(counted[kind]), kind


@pytest.mark.parametrize(("kind", "terms_of"), [
    ("support", lambda ps, n: support_terms(ps, SupportParams(), n)),
    ("heterogeneity",
     lambda ps, n: heterogeneity_terms(ps, HeterogeneityParams(sample=None), n)[0]),
    ("recalibration",
     lambda ps, n: recalibration_terms(ps, [MethodSpec("swc"), MethodSpec("temperature")])[0]),
    ("subgroups", lambda ps, n: subgroups_terms(ps, SubgroupParams(),
                                                [f"x{j}" for j in range(n)], ps.n_rows)),
    ("variables", lambda ps, n: ranking_terms(ps, RankingParams())),
])
def test_estimates_grow_with_rows_and_with_features(kind: str, terms_of: Any) -> None:
    model = cost_models()[kind]
    small, more_rows = prediction_set(300, 3), prediction_set(1_200, 3)
    more_features = prediction_set(300, 9)
    counted_small, counted_large = terms_of(small, 3), terms_of(more_rows, 3)
    assert model.seconds(counted_large) > model.seconds(counted_small)
    assert model.seconds(terms_of(more_features, 9)) >= model.seconds(counted_small)
    assert all(counted_large[name] >= counted_small[name] for name in counted_small)


def test_lece_counts_the_neighbour_search_it_will_run() -> None:
    """Two classes: the sorted search, counted in rows (apart with row weights, a binary
    search more per row); more classes compare every calibration row with every query
    row, counted in pairs. The cross-validation searches the calibration rows (500
    here), the correction every row (1,000); TS+LECE counts its LECE step, and a given
    q and t skip the cross-validation."""
    binary = prediction_set(1_000, 3)
    counted = recalibration_terms(binary, [MethodSpec("lece")])[0]
    assert (counted["lece_rows"], counted["lece_pairs"]) == (500 + 1_000, 0)
    for spec in (MethodSpec("composed"), MethodSpec("lecd"),
                 MethodSpec("composed", {"steps": ["temperature", {"method": "lecd"}]})):
        assert recalibration_terms(binary, [spec])[0]["lece_rows"] == 1_500, spec
    given = MethodSpec("lece", {"neighborhood_size": 0.1, "threshold": 0.0})
    assert recalibration_terms(binary, [given])[0]["lece_rows"] == 1_000
    assert recalibration_terms(binary, [MethodSpec("temperature")])[0]["lece_rows"] == 0
    rng = np.random.default_rng(1)
    table = pd.DataFrame({"x0": rng.normal(size=1_000),
                          "y_prob": rng.uniform(0.02, 0.98, 1_000).round(3)})
    table["y_true"] = (rng.random(1_000) < table["y_prob"]).astype(int)
    table["split"] = np.where(np.arange(1_000) % 2 == 0, "calibration", "test")
    table["weight"] = rng.uniform(0.5, 2.0, 1_000).round(2)
    weighted = build_prediction_set(table, infer_roles(table).to_roles())
    assert weighted.weighted
    counted_weighted = recalibration_terms(weighted, [MethodSpec("lece")])[0]
    assert (counted_weighted["lece_rows"], counted_weighted["lece_weighted_rows"]) == (0, 1_500)
    proba = rng.dirichlet(np.ones(4), 1_000)
    table = pd.DataFrame(proba, columns=[f"proba_{k}" for k in range(4)])
    table["label"] = rng.integers(0, 4, 1_000)
    table["split"] = np.where(np.arange(1_000) % 2 == 0, "calibration", "test")
    classes = build_prediction_set(table, infer_roles(table).to_roles())
    pairs = recalibration_terms(classes, [MethodSpec("lece")])[0]
    assert (pairs["lece_rows"], pairs["lece_pairs"]) == (0, (500 + 1_000) * 500)
    coefficients = cost_models()["recalibration"].coefficients
    for term in ("lece_rows", "lece_weighted_rows", "lece_pairs", "lore_pairs"):
        assert coefficients[term] > 0, term  # each search priced from measured runs


def test_lore_counts_its_kernel_sums_by_their_dimension() -> None:
    """LoRe's kernel sums sweep in up to 3 dimensions (n log^d n) and compare every pair
    of rows of a confidence bin above that: 4 times the rows, 16 times the pairs."""
    three, nine = prediction_set(1_000, 3), prediction_set(1_000, 9)
    swept = recalibration_terms(three, [MethodSpec("lore")])[0]
    size = 500.0 + 1_000.0  # the calibration rows and every row corrected
    assert swept["lore_rows"] == pytest.approx(size * np.log2(size + 1.0) ** 3)
    assert swept["lore_pairs"] == 0
    pairs = recalibration_terms(nine, [MethodSpec("lore")])[0]["lore_pairs"]
    larger = recalibration_terms(prediction_set(4_000, 9), [MethodSpec("lore")])[0]
    assert larger["lore_pairs"] == pytest.approx(16 * pairs, rel=0.1)
    assert recalibration_terms(nine, [MethodSpec("lore", {"n_components": 2})])[0][
        "lore_pairs"] == 0  # two PCA components: swept


def test_a_point_within_a_factor_of_two_else_a_range() -> None:
    assert duration(0.4) == "under a second" and duration(5) == "about 5 s"
    assert duration(400) == "about 7 min" and duration(7200) == "about 2.0 h"
    assert duration(40, spread=2.0) == "about 40 s"  # trusted within a factor of two
    assert duration(40, spread=2.5) == "16 s - 2 min"  # 40 / 2.5 = 16 s, 40 * 2.5 = 100 s
    assert duration(0.2, spread=3.0) == "under a second"
    estimate = CostEstimate(40.0, "a few forests", spread=2.5)
    assert (estimate.low, estimate.high) == (16.0, 100.0)
    assert estimate.as_dict()["text"] == "16 s - 2 min"
    note = cost_note(estimate)
    assert note is not None and note.children == \
        "Estimated time: 16 s - 2 min (a few forests)."


def test_the_fit_recovers_known_coefficients_and_reports_its_spread() -> None:
    rng = np.random.default_rng(3)
    work = rng.uniform(1e5, 1e8, 12)
    rows = [{"seconds": str(0.4 + 2e-7 * w), "terms": json.dumps({"fixed": 1.0, "forest": w})}
            for w in work]
    coefficients, spread = fit(rows)
    assert coefficients["fixed"] == pytest.approx(0.4, rel=1e-6)
    assert coefficients["forest"] == pytest.approx(2e-7, rel=1e-6)
    assert spread == pytest.approx(1.0, abs=1e-6)
    # one run three times slower than the others: the fit cannot come within 2 of it
    rows[0] = {**rows[0], "seconds": str(3 * float(rows[0]["seconds"]))}
    assert fit(rows)[1] > 2.0


def test_a_job_carries_its_estimate_until_its_own_time_left_takes_over() -> None:
    runner = JobRunner(workers=1)
    estimate = CostEstimate(40.0, "a few forests", spread=2.5)
    job = runner.submit("heterogeneity", lambda progress: 1, estimate=estimate.as_dict())
    try:
        snapshot = job.snapshot()
        assert JobResponse.model_validate(snapshot).estimate is not None
        assert snapshot["estimate"]["low"] == 16.0 and snapshot["estimate"]["high"] == 100.0
        line = running_status({**snapshot, "status": "running", "eta_seconds": None}).children
        assert "estimated 16 s - 2 min in all" in line
        later = running_status({**snapshot, "status": "running", "eta_seconds": 30.0}).children
        assert "about 30 s left" in later and "estimated" not in later
    finally:
        runner.shutdown()


def test_an_external_registration_counts_its_bytes_and_columns(tmp_path) -> None:
    from app.services.external import external_terms

    wide = pd.DataFrame(np.zeros((4, 9)), columns=[f"x{j}" for j in range(9)])
    for part in range(2):
        wide.to_parquet(tmp_path / f"part-{part}.parquet")
    wide.iloc[:, :3].to_csv(tmp_path / "narrow.csv", index=False)
    terms = external_terms(str(tmp_path / "*.parquet"))
    size = sum((tmp_path / f"part-{part}.parquet").stat().st_size for part in range(2))
    assert terms == {"fixed": 1.0, "parquet_bytes": float(size), "csv_bytes": 0.0,
                     "columns": 9.0}
    assert external_terms(str(tmp_path / "narrow.csv"))["columns"] == 3.0
    # a path that lists nothing is Dask's start alone
    assert external_terms(str(tmp_path / "none-*.parquet"))["columns"] == 0.0


def test_a_weighted_ranking_is_estimated_longer_than_the_same_rows_unweighted() -> None:
    """The weighted permutation null costs more per row (measured 1.3 s -> 4.3 s on 300,000
    rows): its term is counted only with row weights, and the fitted model prices it."""
    plain = prediction_set(3_000, 4)
    frame = plain.features.copy()
    frame["y_prob"], frame["y_true"] = plain.proba[:, 1], plain.y_true
    frame["weight"] = np.random.default_rng(1).uniform(0.5, 2.0, frame.shape[0])
    weighted = build_prediction_set(frame, infer_roles(frame).to_roles())
    assert weighted.weighted and not plain.weighted
    unweighted_terms = ranking_terms(plain, RankingParams())
    assert unweighted_terms["weighted_variable_rows"] == 0.0
    weighted_terms = ranking_terms(weighted, RankingParams())
    assert weighted_terms["weighted_variable_rows"] == weighted_terms["variable_rows"] > 0
    model = cost_models()["variables"]
    assert model.seconds(weighted_terms) > model.seconds(unweighted_terms)
