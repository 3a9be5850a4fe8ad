"""The manual builds, its links and anchors resolve, its Python examples run, and the README
stays a front page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from tests.conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
#: Every Markdown file a reader of the repository meets.
PAGES = (README, REPO / "CONTRIBUTING.md", *sorted(DOCS.rglob("*.md")))
README_MAX_LINES = 250

FENCE = re.compile(r"^\s*```")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
#: Citations a reader of the repository cannot follow: the product specification, the
#: style notes and the tracker live outside it, and the papers go by authors and year.
UNFOLLOWABLE = {
    "the specification": re.compile(r"\bSPEC\b|SPEC\.md|STYLE\.md"),
    "a tracker issue": re.compile(r"\bissues?\s*#?\d+|\(#\d+\)|\bgh-\d+", re.IGNORECASE),
    "a paper by file number": re.compile(r"\bpapers?\s+00\d\b", re.IGNORECASE),
}


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) outside fenced code blocks, inline code removed."""
    lines, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, re.sub(r"`[^`]*`", "", line)))
    return lines


def anchors(path: Path) -> set[str]:
    """The ids Python-Markdown's toc gives the headings of ``path``."""
    found = set()
    for _, line in prose_lines(path):
        match = HEADING.match(line)
        if match:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2))
            found.add(slugify(text.replace("*", "").replace("\\", ""), "-"))
    return found


def links(path: Path) -> list[tuple[int, str]]:
    return [(number, target) for number, line in prose_lines(path)
            for target in LINK.findall(line)]


def python_blocks(path: Path) -> list[str]:
    return [textwrap.dedent(block) for block in
            re.findall(r"^[ \t]*```python\n(.*?)^[ \t]*```", path.read_text(encoding="utf-8"),
                       re.S | re.M)]


def test_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; move the detail to a page under docs/")
    assert "![" in README.read_text(encoding="utf-8") and (DOCS / "overview.png").exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    broken = []
    for number, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page
        if not resolved.exists():
            broken.append(f"line {number}: {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"line {number}: {target} (no heading #{anchor})")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_citation_a_reader_cannot_follow(page: Path) -> None:
    text = page.read_text(encoding="utf-8").splitlines()
    found = [f"line {number}: {what}: {line.strip()}"
             for number, line in enumerate(text, start=1)
             for what, pattern in UNFOLLOWABLE.items() if pattern.search(line)]
    assert not found, f"{page.relative_to(REPO)}: " + "; ".join(found)


@pytest.mark.slow
def test_mkdocs_builds_strictly(tmp_path: Path) -> None:
    """Broken links, missing anchors, pages left out of the nav and docstring warnings fail
    the build (``--strict``); about 4 s."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
         str(tmp_path / "site")], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert (tmp_path / "site" / "diagnostics" / "views" / "index.html").exists()
    assert (tmp_path / "site" / "api" / "metrics" / "index.html").exists()


def example_pages() -> list[Path]:
    return [README, *sorted((DOCS / "diagnostics").glob("*.md"))]


@pytest.mark.slow
@pytest.mark.parametrize("page", example_pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_python_examples_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python block of the README and the diagnostic pages runs, in order, after the
    set-up of Getting started (the example dataset); ``calibdash.explore`` starts a server
    and is left to tests/test_notebook.py."""
    (setup, *_) = python_blocks(DOCS / "getting-started.md")
    blocks = [block for block in python_blocks(page) if "calibdash.explore" not in block]
    assert blocks, f"{page.name} has no Python example"
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {}
    exec(compile(setup, "getting-started.md", "exec"), namespace)
    for block in blocks:
        exec(compile(block, page.name, "exec"), namespace)
