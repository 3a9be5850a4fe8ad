"""The shape of the code: the core stays free of the web stack, nothing outside it imports
its private parts, and imports between modules only go down."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import calibcore

WEB_STACK = ("fastapi", "starlette", "dash", "plotly", "uvicorn", "flask")


@pytest.mark.slow
def test_calibcore_imports_no_web_or_plotting_library() -> None:
    modules = [m.name for m in pkgutil.walk_packages(calibcore.__path__, "calibcore.")]
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, check=True).stdout)
    offending = [m for m in loaded if m.split(".")[0] in WEB_STACK]
    assert offending == []
    assert len(modules) >= 8


def _imports(package: str) -> dict[str, set[str]]:
    """Every module of ``package`` (under the repository) and the project modules it
    imports, type-checking-only imports included (an AST walk of each file)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    names = {}
    for path in (root / package).rglob("*.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        names[name.removesuffix(".__init__")] = path
    edges: dict[str, set[str]] = {}
    for name, path in names.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        edges[name] = targets
    return edges


def test_nothing_outside_the_core_imports_a_private_core_name() -> None:
    """calibcore's public faces are its modules' ``__all__``: the app, the notebook API and
    the benchmarks import no ``calibcore._x`` module nor a ``_name`` from the core."""
    offending = []
    for package in ("app", "calibdash", "benchmarks"):
        for module, targets in _imports(package).items():
            offending += [(module, target) for target in targets
                          if target.startswith("calibcore") and any(
                              part.startswith("_") for part in target.split("."))]
    assert offending == []


def test_no_import_circles() -> None:
    """Imports between the project's modules only go down (type-checking ones included):
    the import graph of each package has no strongly connected component of more than one
    module (scipy's strong components)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    for package in ("calibcore", "app", "calibdash"):
        edges = _imports(package)
        names = sorted(edges)
        position = {name: number for number, name in enumerate(names)}
        pairs = [(position[name], position[target]) for name, targets in edges.items()
                 for target in targets if target in position and target != name]
        rows, columns = zip(*pairs, strict=True) if pairs else ((), ())
        graph = csr_matrix((np.ones(len(pairs)), (rows, columns)),
                           shape=(len(names), len(names)))
        _, component = connected_components(graph, directed=True, connection="strong")
        sizes = np.bincount(component)
        circles = [[name for name, c in zip(names, component, strict=True) if c == circle]
                   for circle in np.flatnonzero(sizes > 1)]
        assert circles == [], (package, circles)


def test_core_is_concept_packages() -> None:
    """calibcore is a few shared flat modules and concept packages, each with its public
    surface in ``__all__`` (every name of which it really exports), and the packages import
    one another one way only: an import of a package's module runs its ``__init__``, which
    imports all of the package, so a circle between two packages is an import error
    waiting for the right import order even when no two modules import each other."""
    import ast
    import importlib
    from pathlib import Path

    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    core = Path(calibcore.__file__).parent
    flat = sorted(path.name for path in core.glob("*.py"))
    packages = sorted(path.name for path in core.iterdir() if (path / "__init__.py").exists())
    assert len(flat) <= 6, flat
    assert len(packages) >= 6, packages
    for package in packages:
        tree = ast.parse((core / package / "__init__.py").read_text(encoding="utf-8"))
        exported = [ast.literal_eval(node.value) for node in tree.body
                    if isinstance(node, ast.Assign)
                    and any(getattr(target, "id", None) == "__all__" for target in node.targets)]
        assert exported, f"calibcore/{package}/__init__.py has no __all__"
        face = importlib.import_module(f"calibcore.{package}")
        assert [name for name in exported[0] if not hasattr(face, name)] == [], package

    def unit(module: str) -> str:  # calibcore.metrics.binning -> metrics; the top -> calibcore
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else parts[0]

    edges = _imports("calibcore")
    units = sorted({unit(name) for name in edges})
    position = {name: number for number, name in enumerate(units)}
    pairs = {(position[unit(name)], position[unit(target)])
             for name, targets in edges.items() for target in targets
             if target.split(".")[0] == "calibcore" and unit(target) in position
             and unit(target) != unit(name)}
    rows, columns = zip(*pairs, strict=True) if pairs else ((), ())
    graph = csr_matrix((np.ones(len(pairs)), (rows, columns)), shape=(len(units), len(units)))
    _, component = connected_components(graph, directed=True, connection="strong")
    circles = [[name for name, c in zip(units, component, strict=True) if c == circle]
               for circle in np.flatnonzero(np.bincount(component) > 1)]
    assert circles == []
