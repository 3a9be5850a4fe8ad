"""Application settings: one object, read from ``CALIBDASH_*`` environment variables."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Runtime configuration (environment prefix ``CALIBDASH_``).

    Attributes
    ----------
    data_dir : Path
        Where datasets, results and fitted recalibrators are stored.
    max_upload_bytes : int
        Largest accepted upload (default 1 GiB).
    load_example : bool
        Load the bundled example dataset when the store is empty.
    api_token : str or None
        When set, every route except ``/api/v1/health`` and the sign-in page needs it:
        ``Authorization: Bearer <token>`` or the session cookie the sign-in page sets.
    session_hours : float
        Lifetime of a sign-in session cookie.
    public_docs : bool
        Serve ``/docs``, ``/redoc`` (with their scripts and styles) and ``/openapi.json``
        without the token.
    allowed_hosts : str
        Comma-separated host names the ``Host`` header may carry (DNS-rebinding
        defence); ``*`` allows any. Empty: loopback names when bound to a loopback
        address, any host otherwise.
    max_request_bytes : int
        Largest body of any request that is not a file upload (JSON, Dash callbacks).
    max_decompressed_bytes : int
        Largest size of an uploaded table after gzip decompression.
    max_rows, max_columns : int
        Largest accepted table.
    staged_upload_hours : float
        Staged uploads not confirmed within this many hours are deleted.
    compute_slots : int
        Heavy requests (REST computations, Dash callbacks) running at once; the rest
        wait their turn without holding a thread (see ``app.gate``).
    max_model_values : int
        Largest number of array values in an uploaded recalibrator document.
    n_bootstrap : int
        Default bootstrap resamples for intervals.
    job_workers : int
        Threads running background jobs.
    warm_up : bool
        Compile calibcore's kernels and UMAP (numba: half a minute and a minute at the
        first start after an installation, a few seconds later) in background jobs at
        start, so that no job compiles midway (its progress still, a cancel waiting) and
        the first UMAP landscape does not wait.
    dask_scheduler : str or None
        Address of the Dask scheduler that reads external datasets (``tcp://host:8786``);
        none: a local in-process cluster sized to the machine.
    external_roots : str
        Comma-separated folders (absolute paths) and URL prefixes (``s3://bucket/logs/``)
        under which clients may register files by reference; empty turns
        ``POST /api/v1/datasets/external`` off.
    external_sample_rows : int
        Rows of the seeded uniform sample of an external dataset that the per-row
        diagnostics run on.
    """

    model_config = SettingsConfigDict(env_prefix="CALIBDASH_")

    # bounds: a value outside them is refused at start, naming its variable (app.cli),
    # rather than a port wrapped past 65535, or no slot (or thread) for any computation
    data_dir: Path = Field(default=Path(".calibdash"))
    host: str = "127.0.0.1"
    port: int = Field(default=8050, ge=1, le=65_535)
    max_upload_bytes: int = Field(default=1 << 30, ge=1)
    load_example: bool = True
    api_token: str | None = None
    session_hours: float = Field(default=12.0, gt=0)
    public_docs: bool = False
    allowed_hosts: str = ""
    max_request_bytes: int = Field(default=16 << 20, ge=1)
    max_decompressed_bytes: int = Field(default=4 << 30, ge=1)
    max_rows: int = Field(default=20_000_000, ge=1)
    max_columns: int = Field(default=10_000, ge=1)
    staged_upload_hours: float = Field(default=24.0, gt=0)
    max_model_values: int = Field(default=5_000_000, ge=1)
    compute_slots: int = Field(default=2, ge=1)
    n_bootstrap: int = Field(default=200, ge=0, le=2_000)
    job_workers: int = Field(default=2, ge=1)
    warm_up: bool = True
    random_state: int = 0
    dask_scheduler: str | None = None
    external_roots: str = ""
    external_sample_rows: int = Field(default=1_000_000, ge=1_000)


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (tests build their own ``Settings`` instead)."""
    return Settings()
