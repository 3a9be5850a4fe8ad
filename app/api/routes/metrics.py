"""Global measures of a dataset, their sensitivity to the bin count, and its reliability
diagrams."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from app.api.deps import ServicesDep
from app.api.responses import INVALID, NOT_FOUND
from app.schemas import BinSensitivity, MetricsResponse, ReliabilityResponse
from app.services import diagnostics
from calibcore.data import View
from calibcore.metrics import Binning, IntervalMethod

router = APIRouter(prefix="/datasets/{dataset_id}", tags=["metrics"],
                   responses={**NOT_FOUND, **INVALID})

ViewQuery = Annotated[View | None, Query(description=(
    "top_label, positive or classwise; default positive for two classes (P(class 1) "
    "against the frequency of class 1), top_label for more"))]
BinsQuery = Annotated[int, Query(ge=1, le=1000, description="number of bins")]
BinningQuery = Annotated[Binning, Query(description="equal_width or equal_mass")]
SubsetQuery = Annotated[diagnostics.Subset, Query(description=(
    "all, calibration or test rows (calibration and test need a split column: 422 "
    "no_split otherwise)"))]
BootstrapQuery = Annotated[int, Query(ge=0, le=2000,
                                      description="bootstrap resamples for the intervals")]
IntervalQuery = Annotated[IntervalMethod, Query(description=(
    "per-bin interval of the observed frequency: wilson (score interval) or "
    "clopper_pearson (exact, Beta quantiles: at least 95% coverage in every bin, wider)"))]


@router.get("/metrics", response_model=MetricsResponse, response_model_exclude_unset=True)
def get_metrics(services: ServicesDep, dataset_id: str, view: ViewQuery = None,
                n_bins: BinsQuery = 15, binning: BinningQuery = "equal_width",
                subset: SubsetQuery = "all", n_bootstrap: BootstrapQuery = 200,
                ) -> dict[str, Any]:
    """Every global measure of one view on all, calibration or test rows, with 95% intervals.

    ``metrics`` maps measure -> value; ``measures`` adds the basic-bootstrap interval,
    whether the measure is a consistent calibration measure (Błasiok et al. 2023) and its
    meaning. ``calibration_test`` tests whether the probabilities are calibrated at all
    (consistency resampling on kCE, with ``n_bootstrap`` resamples; null when it is 0) in
    the default view, and checks the verdict in a second view (``other_views``); beside
    it, ``cumulative`` gives the KS calibration error and the Kuiper statistic of the
    cumulative curve (Gupta et al. 2021) with their own p-values in the positive and
    top-label views. Results are cached per parameter set.
    """
    request = diagnostics.MetricsRequest(
        view=diagnostics.dataset_view(services, dataset_id, view), n_bins=n_bins,
        binning=binning, subset=subset, n_bootstrap=n_bootstrap)
    return diagnostics.metrics_for(services, dataset_id, request)


@router.get("/metrics/bins", response_model=BinSensitivity, response_model_exclude_unset=True)
def get_bin_sensitivity(services: ServicesDep, dataset_id: str, view: ViewQuery = None,
                        subset: SubsetQuery = "all") -> dict[str, Any]:
    """Binned ECE for 5-100 bins beside the bin-free consistent measures (cached)."""
    return diagnostics.bin_sensitivity_for(
        services, dataset_id, view=diagnostics.dataset_view(services, dataset_id, view),
        subset=subset)


@router.get("/reliability", response_model=ReliabilityResponse,
            response_model_exclude_unset=True)
def get_reliability(services: ServicesDep, dataset_id: str, view: ViewQuery = None,
                    n_bins: BinsQuery = 15, binning: BinningQuery = "equal_width",
                    subset: SubsetQuery = "all", n_bootstrap: BootstrapQuery = 200,
                    interval: IntervalQuery = "wilson") -> dict[str, Any]:
    """Binned diagrams (a 95% interval per bin, Wilson's or Clopper-Pearson's) and smooth
    diagrams (bootstrap band), cached per parameter set."""
    request = diagnostics.MetricsRequest(
        view=diagnostics.dataset_view(services, dataset_id, view), n_bins=n_bins,
        binning=binning, subset=subset, n_bootstrap=n_bootstrap)
    return diagnostics.reliability_for(services, dataset_id, request, interval)
