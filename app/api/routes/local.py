"""Local calibration routes (Luo et al. 2022): LCE landscapes and MLCE curves, both as jobs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import ServicesDep
from app.api.responses import ACCEPTED, INVALID, NOT_FOUND, error, job_accepted
from app.schemas import CurveRequest, JobAccepted, LandscapeRequest, RepresentationRequest
from app.services import local

router = APIRouter(prefix="/datasets/{dataset_id}/lce", tags=["local"],
                   responses={**NOT_FOUND, **INVALID})

_REFUSED = error(422, "Invalid parameters, or ones this dataset cannot serve: unknown "
                      "feature or embedding columns, reducer \"columns\" without "
                      "`embedding_columns`, no features, calibration or test rows without a "
                      "split column; `error.code` says which.")


def _representation(request: RepresentationRequest) -> local.RepresentationParams:
    return local.RepresentationParams(
        features=None if request.features is None else tuple(request.features),
        reducer=request.reducer, n_components=request.n_components,
        embedding_columns=None if request.embedding_columns is None
        else tuple(request.embedding_columns),
        sample_size=request.sample_size, random_state=request.random_state,
        subset=request.subset)


@router.post("", status_code=202, response_model=JobAccepted,
             responses={**ACCEPTED, **_REFUSED})
def create_landscape(services: ServicesDep, dataset_id: str,
                     request: LandscapeRequest | None = None) -> dict[str, Any]:
    """Per-row local calibration error (Luo et al. 2022, eq. 4) on a 2-D map, as a job.

    Progress runs through encoding, fitting the reducer on a seeded sample,
    placing the other rows, the LCE and the summaries. The job's result:
    ``mlce``, ``mean_lce``, ``mce`` and ``ece`` (their gamma -> infinity limits),
    ``bins`` (per confidence bin: count, |conf - acc| as ``gap``, mean and max
    LCE, and ``cdf`` points of the LCE, at most 256 per bin: evenly spaced
    quantiles beyond), ``cdf`` over all rows, ``worst_row``, ``embedding`` (what
    was done: sample, placement, imputation), ``notes``, and ``rows``: map
    position ``x``/``y``, ``lce``, ``signed_lce``, ``confidence``, ``label``,
    ``prediction``, ``id``, ``row`` and ``bin_index`` of at most ``max_points`` rows
    (default 50,000, a seeded uniform sample, sorted by LCE; ``"all"`` sends every
    row). Every row's values are saved in full as the per-row columns ``lce``
    and ``lce_signed`` (download them with a recalibration:
    ``?columns=lce,lce_signed``).

    On a weighted dataset each row's kernel weight is multiplied by its row weight; the
    means, gaps, CDFs and limits are weighted, each bin carries its total ``weight`` and
    the result ``weighted: true``, Kish's ``n_eff`` and ``weights_note`` (the
    representation is fitted on the rows unweighted).

    The embedding is cached per representation and the LCE per (representation,
    gamma, bins): asking again, or with another gamma, is fast.
    """
    request = request or LandscapeRequest()
    params = local.LandscapeParams(
        representation=_representation(request), gamma=request.gamma, n_bins=request.n_bins,
        max_points=None if request.max_points == "all" else request.max_points,
        bin_index=request.bin)
    return job_accepted(local.start_landscape(services, dataset_id, params))


@router.post("/curve", status_code=202, response_model=JobAccepted,
             responses={**ACCEPTED, **_REFUSED})
def create_curve(services: ServicesDep, dataset_id: str,
                 request: CurveRequest | None = None) -> dict[str, Any]:
    """MLCE and mean LCE against gamma (Luo et al. 2022, Figures 1 and 16), as a job.

    Same representation parameters as ``POST .../lce`` (and the same cached
    embedding). The job's result: ``gammas``, ``mlce``, ``mean_lce``, and ``mce``
    and ``ece``, their limits as gamma -> infinity (Lemma 1), weighted on a weighted
    dataset (with ``weighted``, ``n_eff``, ``weights_note``). Cached per parameter set.
    """
    request = request or CurveRequest()
    params = local.CurveParams(
        representation=_representation(request),
        gammas=None if request.gammas is None else tuple(request.gammas),
        gamma_min=request.gamma_min, gamma_max=request.gamma_max, n_gammas=request.n_gammas,
        n_bins=request.n_bins)
    return job_accepted(local.start_curve(services, dataset_id, params))
