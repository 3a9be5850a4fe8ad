"""What several pages' callbacks need from the services, off the event loop."""

from __future__ import annotations

import asyncio
from typing import Any

from app.services.context import Services
from app.services.datasets import NotFound


async def dataset_summary(services: Services, dataset_id: str | None) -> dict[str, Any] | None:
    """The chosen dataset's summary, or None when none is chosen or it was deleted."""
    if not dataset_id:
        return None
    try:
        return await asyncio.to_thread(services.datasets.summary, dataset_id)
    except NotFound:
        return None
