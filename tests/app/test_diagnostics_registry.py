"""One registry of diagnostics: the navigation, the REST routers and the report sections
are read from it, and nothing is registered anywhere else."""

from __future__ import annotations

import importlib
import pkgutil

from app import diagnostics
from app.api import routes as route_package
from app.ui import report, shell


def test_the_navigation_is_the_registry() -> None:
    assert list(shell.PAGES) == [d.path for d in diagnostics.DIAGNOSTICS]
    for diagnostic in diagnostics.DIAGNOSTICS:
        label, page = shell.PAGES[diagnostic.path]
        assert label == diagnostic.label and page.__name__ == diagnostic.page
        assert callable(page.layout) and callable(page.register)


def test_every_route_module_is_served_and_declared_once(client) -> None:
    """Each module of app.api.routes belongs to a diagnostic or to the infrastructure, and
    the API documents exactly the routes of those modules."""
    modules = {name for _, name, _ in pkgutil.iter_modules(route_package.__path__)}
    assert set(diagnostics.router_modules()) == modules
    declared = set()
    for name in diagnostics.router_modules():
        for route in importlib.import_module(f"app.api.routes.{name}").router.routes:
            if route.include_in_schema:
                path = "/api/v1" + route.path.replace(":path}", "}")  # OpenAPI's form
                declared.update((method.lower(), path) for method in route.methods)
    documented = {(method, path) for path, item in client.app.openapi()["paths"].items()
                  for method in item if path.startswith("/api/v1")}
    assert declared == documented


def test_every_report_section_is_drawn() -> None:
    keys = {d.report for d in diagnostics.DIAGNOSTICS if d.report is not None}
    assert keys == set(report.SECTIONS)
    assert {d.cli for d in diagnostics.DIAGNOSTICS if d.cli} <= {"report", "recalibrate",
                                                                "apply", "serve"}
    assert diagnostics.find("variables").routers == ("variables",)
