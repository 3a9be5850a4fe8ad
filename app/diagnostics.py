"""Every diagnostic of the product, declared once.

A diagnostic is a page of the dashboard, the REST routers that serve it, the command-line
subcommand that gives it (if any) and its section of ``calibdash report`` (if any). The
navigation (:mod:`app.ui.shell`), the list of REST routers (:mod:`app.api`) and the HTML
report (:mod:`app.ui.report`) all read :data:`DIAGNOSTICS`, so adding a diagnostic is one
entry here beside its page, router, service and core function (see CONTRIBUTING.md).

Modules are named rather than imported: the page modules import the services, the
routers import FastAPI, and each reader imports only what it needs, when it needs it.

>>> [d.path for d in DIAGNOSTICS][:3]
['/', '/overview', '/compare']
>>> find("variables").routers
('variables',)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic: where it is shown, served, run and reported.

    Attributes
    ----------
    slug : str
        Its name in code and docs (``docs/diagnostics/<slug>.md`` when it has a page there).
    label : str
        Its name in the navigation.
    path : str
        The URL path of its page.
    page : str
        The module of its page (with ``layout(services)`` and ``register(app, services)``).
    routers : tuple of str
        Modules of ``app.api.routes`` whose ``router`` serves it under ``/api/v1``.
    cli : str or None
        The ``calibdash`` subcommand that gives it, if any.
    report : str or None
        The key of its section in the report of ``calibdash report`` (JSON and HTML).
    """

    slug: str
    label: str
    path: str
    page: str
    routers: tuple[str, ...] = ()
    cli: str | None = None
    report: str | None = None

    def page_module(self) -> ModuleType:
        return importlib.import_module(self.page)


#: In navigation order.
DIAGNOSTICS: tuple[Diagnostic, ...] = (
    Diagnostic("data", "Data", "/", "app.ui.pages.data", routers=("datasets", "uploads")),
    Diagnostic("overview", "Overview", "/overview", "app.ui.pages.overview",
               routers=("metrics",), cli="report", report="metrics"),
    Diagnostic("compare", "Compare", "/compare", "app.ui.pages.compare",
               routers=("compare",), cli="report", report="comparison"),
    Diagnostic("clinical", "Clinical", "/clinical", "app.ui.pages.clinical",
               routers=("clinical",), cli="report", report="clinical"),
    Diagnostic("variables", "Variables", "/variables", "app.ui.pages.variables",
               routers=("variables",), cli="report", report="variables"),
    Diagnostic("local", "Local", "/local", "app.ui.pages.local", routers=("local",)),
    Diagnostic("heterogeneity", "Heterogeneity", "/heterogeneity",
               "app.ui.pages.heterogeneity", routers=("heterogeneity", "support")),
    Diagnostic("subgroups", "Subgroups", "/subgroups", "app.ui.pages.subgroups",
               routers=("subgroups",)),
    Diagnostic("timeline", "Over time", "/over-time", "app.ui.pages.timeline",
               routers=("timeline",)),
    Diagnostic("decision", "Decisions", "/decision", "app.ui.pages.decision",
               routers=("decision",), cli="report", report="decision"),
    Diagnostic("recalibration", "Recalibrate", "/recalibrate", "app.ui.pages.recalibrate",
               routers=("recalibrations", "models"), cli="recalibrate"),
)

#: Routers that serve no one diagnostic: liveness and methods, and jobs.
INFRASTRUCTURE_ROUTERS: tuple[str, ...] = ("meta", "jobs")


def find(slug: str) -> Diagnostic:
    """The diagnostic named ``slug``."""
    for diagnostic in DIAGNOSTICS:
        if diagnostic.slug == slug:
            return diagnostic
    raise KeyError(f"no diagnostic {slug!r}; they are {', '.join(d.slug for d in DIAGNOSTICS)}")


def router_modules() -> list[str]:
    """Every module of ``app.api.routes`` to include, each once, in registry order."""
    names = [*INFRASTRUCTURE_ROUTERS, *(name for d in DIAGNOSTICS for name in d.routers)]
    return list(dict.fromkeys(names))


__all__ = ["DIAGNOSTICS", "INFRASTRUCTURE_ROUTERS", "Diagnostic", "find", "router_modules"]
