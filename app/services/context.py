"""The services one application instance shares between its REST API and its UI."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from app.config import Settings
from app.jobs import JobRunner
from app.services.datasets import DatasetService
from app.services.recalibration import RecalibrationService
from app.store import Store


@dataclass(frozen=True)
class Services:
    """Store, job runner and domain services built from one :class:`Settings`."""

    settings: Settings
    store: Store
    jobs: JobRunner
    datasets: DatasetService
    recalibrations: RecalibrationService

    @classmethod
    def build(cls, settings: Settings) -> Services:
        store = Store(settings.data_dir)
        datasets = DatasetService(store)
        return cls(settings=settings, store=store, jobs=JobRunner(settings.job_workers),
                   datasets=datasets,
                   recalibrations=RecalibrationService(store, datasets, settings.random_state))


def example_path() -> Path:
    """The bundled example prediction file (default_nb.csv)."""
    return Path(str(resources.files("app") / "examples" / "default_nb.csv"))
