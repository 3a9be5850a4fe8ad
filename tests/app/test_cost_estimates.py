"""Cost estimates before a long job starts: they grow with the work, say what they count,
offer a cheaper setting when they are long, and know a cached result costs nothing."""

from __future__ import annotations

import time

import pytest

from app.services import local
from app.services.cost import CostEstimate, duration
from app.services.heterogeneity import HeterogeneityParams, estimate_heterogeneity
from app.services.support import SupportParams, estimate_support
from app.ui.job_panel import cost_note
from tests.app.test_api import upload


@pytest.mark.slow
def test_hh_estimate_grows_with_the_rows_and_a_cached_result_is_free(client, shared_data) -> None:
    services = client.app.state.services
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    every_row = estimate_heterogeneity(services, dataset, HeterogeneityParams(sample=None))
    sample = estimate_heterogeneity(services, dataset, HeterogeneityParams(sample=40))
    assert every_row.seconds > 5 * sample.seconds > 0
    assert "local forests" in every_row.basis and "3 feature columns" in every_row.basis
    assert every_row.cheaper is not None and "200 test rows" in every_row.cheaper
    response = client.post(f"/api/v1/datasets/{dataset}/heterogeneity", json={"sample": 40})
    job_id = response.json()["job_id"]
    while client.get(f"/api/v1/jobs/{job_id}").json()["status"] in ("queued", "running"):
        time.sleep(0.1)
    cached = estimate_heterogeneity(services, dataset, HeterogeneityParams(sample=40))
    assert cached.seconds == 0 and "cached" in cached.basis


def test_support_and_umap_estimates_name_a_cheaper_setting(client, shared_data) -> None:
    services = client.app.state.services
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    support = estimate_support(services, dataset, SupportParams())
    assert "6 proximity forests" in support.basis and support.cheaper is not None
    assert "2 folds" in support.cheaper
    umap = local.estimate_landscape(services, dataset,
                                    local.RepresentationParams(reducer="umap"))
    pca = local.estimate_landscape(services, dataset, local.RepresentationParams())
    assert umap.seconds > 10 * pca.seconds and "UMAP fitted on 7,000" in umap.basis
    assert umap.cheaper is not None and "PCA" in umap.cheaper


def test_a_long_estimate_warns_with_the_cheaper_setting() -> None:
    long = cost_note(CostEstimate(300.0, "500 local forests", "evaluate 200 rows: about 2 min"))
    assert long is not None and "note-warning" in long.className
    assert "about 5 min" in long.children and "Cheaper: evaluate 200 rows" in long.children
    short = cost_note(CostEstimate(20.0, "a few forests", "fewer"))
    assert short is not None and "note-warning" not in short.className
    assert short.children == "Estimated time: about 20 s (a few forests)."
    assert duration(5) == "about 5 s" and duration(7200) == "about 2.0 h"


def test_swc_hh_estimate_offers_plain_swc(client, shared_data) -> None:
    from app.services.methods import MethodSpec

    services = client.app.state.services
    dataset = upload(client, (shared_data / "default_nb.csv").read_bytes()).json()["id"]
    quick = services.recalibrations.estimate(dataset, [MethodSpec("temperature")])
    both = services.recalibrations.estimate(dataset, [MethodSpec("swc"), MethodSpec("swc_hh")])
    assert quick.seconds < 10 and not quick.long
    assert both.seconds > quick.seconds and "swc_hh:" in both.basis
    assert both.cheaper is not None and "SWC without the HH filter" in both.cheaper
