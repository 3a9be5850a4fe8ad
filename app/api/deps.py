"""FastAPI dependencies: the shared services."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.services.context import Services


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]

