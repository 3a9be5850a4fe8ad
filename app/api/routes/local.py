"""Local calibration routes (Luo et al. 2022): LCE landscapes and MLCE curves, both as jobs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import ServicesDep
from app.schemas.models import MAX_ROW_COUNT, ErrorResponse, RowCount
from app.services import local
from app.services.diagnostics import Subset
from calibcore.embedding import DEFAULT_SAMPLE_SIZE, Reducer

router = APIRouter(tags=["local"], responses={404: {"model": ErrorResponse},
                                               422: {"model": ErrorResponse}})

_ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"description": "accepted as a job: poll GET /api/v1/jobs/{job_id}"}}
Seed = Annotated[int, Field(ge=0, le=2**32 - 1, description="seeds the sample and the reducer")]
Gamma = Annotated[float, Field(gt=0.0, le=1e6, allow_inf_nan=False)]


class RepresentationRequest(BaseModel):
    """How the kernel space phi is built (encoding, then an optional reducer), and on which rows."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    features: list[str] | None = Field(
        default=None, min_length=1,
        description="feature columns to embed (default: all); numeric ones standardized, "
                    "categorical ones one-hot, missing values imputed")
    reducer: Reducer = Field(
        default="pca", description="none (the encoded features), pca, tsne, umap, or columns "
                                   "(embedding_columns used as given)")
    n_components: int = Field(default=2, ge=1, le=200,
                              description="PCA components, or 2/3 for t-SNE and UMAP")
    embedding_columns: list[str] | None = Field(
        default=None, min_length=1,
        description='numeric feature columns holding an embedding (reducer "columns" only)')
    sample_size: int | None = Field(
        default=DEFAULT_SAMPLE_SIZE, ge=10, le=MAX_ROW_COUNT,
        description="fit the reducer on a seeded sample of this many rows and place the rest; "
                    "null fits on every row")
    random_state: Seed = 0
    subset: Subset = Field(default="all", description="all, calibration or test rows")

    def params(self) -> local.RepresentationParams:
        return local.RepresentationParams(
            features=None if self.features is None else tuple(self.features),
            reducer=self.reducer, n_components=self.n_components,
            embedding_columns=None if self.embedding_columns is None
            else tuple(self.embedding_columns),
            sample_size=self.sample_size, random_state=self.random_state, subset=self.subset)


class LandscapeRequest(RepresentationRequest):
    """One LCE landscape."""

    gamma: Gamma | None = Field(
        default=None, description="kernel bandwidth; default 0.2 for 2-D/3-D maps (t-SNE, "
                                  "UMAP), 0.4 for PCA and wider feature spaces (the paper's)")
    n_bins: int = Field(default=15, ge=1, le=100, description="equal-width confidence bins")
    max_points: RowCount | Literal["all"] = Field(
        default=local.MAX_DISPLAY_POINTS,
        description="most rows returned in `rows` (a seeded uniform sample); \"all\" for every "
                    "row")
    bin: int | None = Field(default=None, ge=0, le=99,
                            description="return in `rows` only the rows of this confidence bin "
                                        "(0 to n_bins - 1)")


class CurveRequest(RepresentationRequest):
    """MLCE and mean LCE against the bandwidth."""

    gammas: list[Gamma] | None = Field(
        default=None, min_length=1, max_length=200,
        description="bandwidths; default: a log grid from gamma_min to gamma_max")
    gamma_min: Gamma = 1e-3
    gamma_max: Gamma = 1e2
    n_gammas: int = Field(default=21, ge=2, le=200)
    n_bins: int = Field(default=15, ge=1, le=100, description="equal-width confidence bins")


def _accepted(job_id: str, snapshot: dict[str, Any]) -> JSONResponse:
    return JSONResponse(status_code=202, content={**snapshot, "job_id": job_id})


@router.post("/datasets/{dataset_id}/lce", status_code=202, responses=_ACCEPTED)
def create_landscape(services: ServicesDep, dataset_id: str,
                     request: LandscapeRequest | None = None) -> JSONResponse:
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

    The embedding is cached per representation and the LCE per (representation,
    gamma, bins): asking again, or with another gamma, is fast.
    """
    request = request or LandscapeRequest()
    params = local.LandscapeParams(
        representation=request.params(), gamma=request.gamma, n_bins=request.n_bins,
        max_points=None if request.max_points == "all" else request.max_points,
        bin_index=request.bin)
    job = local.start_landscape(services, dataset_id, params)
    return _accepted(job.id, job.snapshot())


@router.post("/datasets/{dataset_id}/lce/curve", status_code=202, responses=_ACCEPTED)
def create_curve(services: ServicesDep, dataset_id: str,
                 request: CurveRequest | None = None) -> JSONResponse:
    """MLCE and mean LCE against gamma (Luo et al. 2022, Figures 1 and 16), as a job.

    Same representation parameters as ``POST .../lce`` (and the same cached
    embedding). The job's result: ``gammas``, ``mlce``, ``mean_lce``, and ``mce``
    and ``ece``, their limits as gamma -> infinity (Lemma 1). Cached per
    parameter set.
    """
    request = request or CurveRequest()
    params = local.CurveParams(
        representation=request.params(),
        gammas=None if request.gammas is None else tuple(request.gammas),
        gamma_min=request.gamma_min, gamma_max=request.gamma_max, n_gammas=request.n_gammas,
        n_bins=request.n_bins)
    job = local.start_curve(services, dataset_id, params)
    return _accepted(job.id, job.snapshot())
