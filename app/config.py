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
        When set, every ``/api`` request needs ``Authorization: Bearer <token>``.
    n_bootstrap : int
        Default bootstrap resamples for intervals.
    job_workers : int
        Threads running background jobs.
    warm_up : bool
        Compile UMAP (numba, about a minute) in a background job at start, so the first
        UMAP landscape does not wait for it.
    """

    model_config = SettingsConfigDict(env_prefix="CALIBDASH_")

    data_dir: Path = Field(default=Path(".calibdash"))
    host: str = "127.0.0.1"
    port: int = 8050
    max_upload_bytes: int = 1 << 30
    load_example: bool = True
    api_token: str | None = None
    n_bootstrap: int = 200
    job_workers: int = 2
    warm_up: bool = True
    random_state: int = 0


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (tests build their own ``Settings`` instead)."""
    return Settings()
