"""What a service function reads from the application's services.

The functions of the diagnostic services take the application's
:class:`app.services.context.Services` as their first argument but read only a few of
its parts. They are typed against this protocol, which names those parts, so that no
service module imports the module that assembles them (which imports the services in
turn): the imports between services only go down.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from app.config import Settings
from app.jobs import JobRunner
from app.services.datasets import DatasetService
from app.store import Store


class RecalibrationListing(Protocol):
    """The stored recalibrations of a dataset (to reuse their fitted parts and scores)."""

    def list(self, dataset_id: str) -> list[dict[str, Any]]: ...

    def corrected_probabilities(self, recalibration_id: str,
                                n_classes: int) -> NDArray[np.float64]: ...


class ServiceContext(Protocol):
    """The settings, store, job runner and datasets every service may use."""

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> Store: ...

    @property
    def jobs(self) -> JobRunner: ...

    @property
    def datasets(self) -> DatasetService: ...

    @property
    def recalibrations(self) -> RecalibrationListing: ...


__all__ = ["RecalibrationListing", "ServiceContext"]
