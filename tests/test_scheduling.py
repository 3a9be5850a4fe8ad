"""The groups the xdist scheduler keeps on one worker and the long files collected first
(tests/conftest.py) name real files, and every file that uses the session's Dask cluster
is in its group (else a second worker would start a cluster of its own)."""

from __future__ import annotations

import re

from tests.conftest import DASK_FILES, LONG_FILES, REPO, UMAP_FILES


def test_grouped_files_exist() -> None:
    missing = [name for name in (*UMAP_FILES, *DASK_FILES, *LONG_FILES)
               if not (REPO / "tests" / name).is_file()]
    assert missing == []


def test_every_file_using_the_dask_cluster_is_in_its_group() -> None:
    using = {path.relative_to(REPO / "tests").as_posix()
             for path in (REPO / "tests").rglob("test_*.py")
             if re.search(r"\bdask_cluster\b", path.read_text())}
    assert using == set(DASK_FILES)
