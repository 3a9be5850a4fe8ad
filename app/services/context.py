"""The services one application instance shares between its REST API and its UI."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from app.config import Settings
from app.jobs import JobRunner
from app.services.datasets import DatasetService
from app.services.recalibration import RecalibrationService
from app.services.tables import TableLimits, release_memory
from app.store import Store

#: Folder of the data directory where uploads are spooled while they arrive
#: (:func:`app.api.uploads.saved_upload`); nothing in it outlives its request.
INCOMING = "incoming"

logger = logging.getLogger("calibdash")


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
        """Open the store and clear what a killed server left behind.

        Building removes spooled uploads, temporary files and orphan tables (the
        store), deletes expired staged uploads and marks jobs that were running as
        interrupted (the job runner).
        """
        remove_incoming(settings.data_dir / INCOMING)
        store = Store(settings.data_dir)
        stopping = threading.Event()
        jobs = JobRunner(settings.job_workers, store, on_idle=release_memory)
        datasets = DatasetService(store, TableLimits.from_settings(settings), stopping,
                                  staged_upload_hours=settings.staged_upload_hours,
                                  on_delete=jobs.stop_jobs_reading)
        datasets.expire_uploads()
        return cls(settings=settings, store=store, jobs=jobs,
                   datasets=datasets,
                   recalibrations=RecalibrationService(store, datasets, settings.random_state),
                   stopping=stopping)


def remove_incoming(folder: Path) -> list[Path]:
    """Delete uploads a killed server was receiving (a server builds its services once)."""
    if not folder.is_dir():
        return []
    removed = []
    for path in folder.iterdir():
        if path.is_file():
            size = path.stat().st_size
            path.unlink(missing_ok=True)
            removed.append(path)
            logger.warning("removed an upload left by an interrupted request: %s (%s bytes)",
                           path, f"{size:,}")
    return removed


def example_path() -> Path:
    """The bundled example prediction file (default_nb.csv)."""
    return Path(str(resources.files("app") / "examples" / "default_nb.csv"))
