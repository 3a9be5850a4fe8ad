"""The services one application instance shares between its REST API and its UI."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from app.config import Settings
from app.jobs import JobRunner
from app.services.datasets import DatasetService
from app.services.recalibration import RecalibrationService
from app.services.tables import TableLimits
from app.store import Store


@dataclass(frozen=True)
class Services:
    """Store, job runner and domain services built from one :class:`Settings`.

    ``stopping`` is set when the server shuts down: uploads being parsed stop.
    """

    settings: Settings
    store: Store
    jobs: JobRunner
    datasets: DatasetService
    recalibrations: RecalibrationService
    stopping: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def build(cls, settings: Settings) -> Services:
        store = Store(settings.data_dir)
        stopping = threading.Event()
        datasets = DatasetService(store, TableLimits.from_settings(settings), stopping)
        return cls(settings=settings, store=store, jobs=JobRunner(settings.job_workers),
                   datasets=datasets,
                   recalibrations=RecalibrationService(store, datasets, settings.random_state),
                   stopping=stopping)


def example_path() -> Path:
    """The bundled example prediction file (default_nb.csv)."""
    return Path(str(resources.files("app") / "examples" / "default_nb.csv"))
