"""Local calibration (Luo et al. 2022): the requests of LCE landscapes and MLCE curves."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.parameters import MAX_ROW_COUNT, WHOLE_NUMBER, JsonInt, RowCount, Seed
from app.services.diagnostics import Subset
from app.services.local import MAX_DISPLAY_POINTS
from calibcore.local.embedding import DEFAULT_SAMPLE_SIZE, Reducer

#: A kernel bandwidth.
Gamma = Annotated[float, Field(gt=0.0, le=1e6, allow_inf_nan=False)]


def _embedding_columns_only_with_their_reducer(schema: dict[str, Any]) -> None:
    schema["if"] = {"properties": {"reducer": {"const": "columns"}}, "required": ["reducer"]}
    schema["then"] = {"properties": {"embedding_columns": {"type": "array"}},
                      "required": ["embedding_columns"]}
    schema["else"] = {"properties": {"embedding_columns": {"type": "null"}}}


class RepresentationRequest(BaseModel):
    """How the kernel space phi is built (encoding, then an optional reducer), and on which
    rows."""

    # the schema says what the service checks: embedding_columns with reducer "columns"
    # (where they are needed) and only there
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False,
                              json_schema_extra=_embedding_columns_only_with_their_reducer)

    features: list[str] | None = Field(
        default=None, min_length=1,
        description="feature columns to embed (default: all); numeric ones standardized, "
                    "categorical ones one-hot, missing values imputed")
    reducer: Reducer = Field(
        default="pca", description="none (the encoded features), pca, tsne, umap, or columns "
                                   "(embedding_columns used as given)")
    n_components: JsonInt = Field(default=2, ge=1, le=200,
                              description="PCA components, or 2/3 for t-SNE and UMAP")
    embedding_columns: list[str] | None = Field(
        default=None, min_length=1,
        description='numeric feature columns holding an embedding (reducer "columns" only, '
                    'which needs them)')
    sample_size: Annotated[int, Field(ge=10, le=MAX_ROW_COUNT), WHOLE_NUMBER] | None = Field(
        default=DEFAULT_SAMPLE_SIZE,
        description="fit the reducer on a seeded sample of this many rows and place the rest; "
                    "null fits on every row")
    random_state: Seed = Field(default=0, description="seeds the sample and the reducer")
    subset: Subset = Field(default="all", description="all, calibration or test rows")


class LandscapeRequest(RepresentationRequest):
    """One LCE landscape."""

    gamma: Gamma | None = Field(
        default=None, description="kernel bandwidth; default 0.2 for 2-D/3-D maps (t-SNE, "
                                  "UMAP), 0.4 for PCA and wider feature spaces (the paper's)")
    n_bins: JsonInt = Field(default=15, ge=1, le=100, description="equal-width confidence bins")
    max_points: RowCount | Literal["all"] = Field(
        default=MAX_DISPLAY_POINTS,
        description="most rows returned in `rows` (a seeded uniform sample); \"all\" for every "
                    "row")
    bin: Annotated[int, Field(ge=0, le=99), WHOLE_NUMBER] | None = Field(
        default=None, description="return in `rows` only the rows of this confidence bin (0 to "
        "n_bins - 1)")


class CurveRequest(RepresentationRequest):
    """MLCE and mean LCE against the bandwidth."""

    gammas: list[Gamma] | None = Field(
        default=None, min_length=1, max_length=200,
        description="bandwidths; default: a log grid from gamma_min to gamma_max")
    gamma_min: Gamma = 1e-3
    gamma_max: Gamma = 1e2
    n_gammas: JsonInt = Field(default=21, ge=2, le=200)
    n_bins: JsonInt = Field(default=15, ge=1, le=100, description="equal-width confidence bins")
