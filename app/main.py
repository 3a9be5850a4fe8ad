"""The application: FastAPI (REST under /api/v1, OpenAPI at /docs) + the Dash UI at /."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.api import build_router
from app.api.docs import install_docs
from app.api.errors import install_error_handlers
from app.api.openapi import install_openapi
from app.config import Settings, get_settings
from app.gate import ComputeGate, GateMiddleware
from app.security import SecurityMiddleware
from app.services.context import Services, example_path
from app.services.local_embedding import start_warm_up
from app.services.warm_up import start_kernel_warm_up
from app.ui.dashboard import build_dash
from app.ui.dispatch_guard import DispatchGuard

logger = logging.getLogger("calibdash")


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build one ASGI application serving the REST API and the Dash UI.

    Parameters
    ----------
    settings : Settings, optional
        Defaults to the environment (``CALIBDASH_*``).
    """
    settings = settings or get_settings()
    services = Services.build(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        ComputeGate.tune_interpreter()
        services.stopping.clear()  # a lifespan may run again (test clients, schemathesis)
        services.jobs.start()
        if settings.load_example:
            loaded = services.datasets.ensure_example(example_path())
            if loaded:
                logger.info("loaded the example dataset as %s", loaded)
        if settings.warm_up:
            start_kernel_warm_up(services, then=lambda: start_warm_up(services))
        yield
        services.stopping.set()  # parses in progress stop at their next chunk
        services.jobs.shutdown()

    app = FastAPI(title="calibdash", version="0.1.0", lifespan=lifespan,
                  description="Calibration diagnostics: where a classifier's probabilities are "
                  "wrong, and how to fix them.",
                  docs_url=None, redoc_url=None)  # FastAPI's would load them from a CDN
    app.state.services = services
    install_error_handlers(app)
    install_docs(app)

    app.include_router(build_router())
    install_openapi(app, settings)
    gate = ComputeGate(settings.compute_slots)
    dash_app = build_dash(app, services, gate)
    app.add_middleware(DispatchGuard, outputs=lambda: dash_app.callback_map)
    app.add_middleware(GateMiddleware, gate=gate)
    # added last, so it wraps everything Dash and FastAPI added: nothing runs before it
    app.add_middleware(SecurityMiddleware, settings=settings)
    return app
