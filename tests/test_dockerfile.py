"""The Docker image ships every package the wheel ships: a new package in pyproject.toml's
``[tool.setuptools.packages.find] include`` cannot be forgotten in docker/Dockerfile."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO

DOCKERFILE = REPO / "docker" / "Dockerfile"


def shipped_packages() -> set[str]:
    """Top-level packages of ``include`` (``"calibcore*"`` -> ``calibcore``)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return {pattern.rstrip("*").rstrip(".") for pattern in include}


def copied_sources() -> set[str]:
    """Every source of every COPY instruction (the destination is the last argument)."""
    sources: set[str] = set()
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\s*COPY\s+(.+)$", line, re.IGNORECASE)
        if match:
            arguments = [a for a in match.group(1).split() if not a.startswith("--")]
            sources.update(a.rstrip("/") for a in arguments[:-1])
    return sources


def test_dockerfile_copies_every_shipped_package() -> None:
    packages = shipped_packages()
    assert {"calibcore", "app", "calibdash"} <= packages
    missing = packages - copied_sources()
    assert not missing, f"docker/Dockerfile does not COPY {sorted(missing)}"


def test_dockerfile_copies_what_pip_install_needs() -> None:
    assert {"pyproject.toml", "README.md"} <= copied_sources()  # readme = "README.md"
    assert all((REPO / source).exists() for source in copied_sources())
