"""Shared fixtures: example data paths, seeded generators, an app on a temporary store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from tests import live_server

# Property tests are deterministic: the same examples on every run and machine (derandomized
# from each test's own source, no example database carried between runs), so CI never goes
# red by chance; breadth comes from each test's max_examples, larger in the slow tier.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None,
                          print_blob=True)
settings.load_profile("deterministic")

# Servers the tests start are forked from a process that imported the app once (a start
# then costs 0.3 s of CPU, not 2.3 s); see tests.live_server.
live_server.PRELOADED = True

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CALIBDASH_SHARED_DATA", REPO.parent / "shared" / "data"))

#: Test files that compile umap-learn's numba code in the test process (about 15 s of CPU
#: each time a process does it first): one xdist worker runs them all, so the suite pays
#: the compile once (:func:`pytest_xdist_make_scheduler`).
UMAP_FILES = ("app/test_local_api.py", "app/test_cancel_latency.py",
              "calibcore/local/test_embedding.py", "calibcore/local/test_umap_index.py",
              "test_benchmarks.py")  # bench_local's smoke run embeds with UMAP
#: Test files that use the session's Dask cluster (:func:`dask_cluster`): one xdist worker
#: runs them all, so the suite starts and stops one cluster (two worker processes that
#: each import calibcore) instead of one per worker.
DASK_FILES = ("app/test_dask_weights.py", "app/test_external_api.py",
              "calibcore/partitioned/test_partitioned.py",
              "calibcore/partitioned/test_partitioned_variables.py",
              "calibcore/partitioned/test_weighted_variables_dask.py")
#: Files (or groups) of 40 s or more on the 2-core CI machine (its --durations output),
#: longest first, collected first. xdist hands out whole files by their number of tests,
#: most first (its loadscope reorder), so under xdist this order only breaks ties; handing
#: out the long files first instead (``--no-loadscope-reorder``) was measured slower on a
#: fresh clone: the Dask group then ran before any test had compiled calibcore's kernels,
#: and its cluster's worker processes compiled them again.
LONG_FILES = (*UMAP_FILES, "calibcore/metrics/test_resampling.py",
              "calibcore/metrics/test_interval_coverage.py", "test_benchmark_path.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    first_dask = next((i for i, item in enumerate(items) if _relative(item) in DASK_FILES), 0)

    def rank(indexed: tuple[int, pytest.Item]) -> tuple[int, int]:
        index, item = indexed
        path = _relative(item)
        if path in LONG_FILES:
            return LONG_FILES.index(path), index
        # the Dask files in a row where the first of them is: xdist runs them as one unit
        # there, and without xdist their cluster, closed after the last, is not met closed
        return len(LONG_FILES), first_dask if path in DASK_FILES else index

    # stable: the order within each file and among the rest is kept
    items[:] = [item for _, item in sorted(enumerate(items), key=rank)]
    strays = sorted({_relative(item) for item in items if "dask_cluster" in item.fixturenames}
                    - set(DASK_FILES))
    if strays:  # they would meet the cluster closed, or start it a second time
        raise pytest.UsageError(f"list {strays} in DASK_FILES (tests/conftest.py): "
                                "they use the dask_cluster fixture")


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Whole files per worker (``--dist loadfile``), the :data:`UMAP_FILES` as one unit and
    the :data:`DASK_FILES` as another."""
    from xdist.scheduler import LoadFileScheduling

    class FilesAndGroups(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            relative = path.removeprefix("tests/")
            return ("umap-files" if relative in UMAP_FILES
                    else "dask-files" if relative in DASK_FILES else path)

    return FilesAndGroups(config, log)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "default_nb.csv").exists():
        pytest.fail(f"example data not found in {SHARED_DATA}; set CALIBDASH_SHARED_DATA")
    return SHARED_DATA


#: The cluster of :func:`dask_cluster` while it runs (closed by :func:`pytest_runtest_teardown`).
_DASK_CLUSTER: list[object] = []


@pytest.fixture(scope="session")
def dask_cluster() -> Iterator[object]:
    """A LocalCluster of two worker processes, started on first use and shared by the
    :data:`DASK_FILES` (each started its own: ~5 s to start, ~4 s to stop, and its
    workers' first task imports calibcore again). Tests connect a Client of their own, so
    no module's default client outlives it. It is closed once the last of those files
    has run: idle, its scheduler and workers still take ~7% of a core."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        _DASK_CLUSTER.append(cluster)
        yield cluster
        _DASK_CLUSTER.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Once the test process leaves the :data:`DASK_FILES` (one unit of work, run in a
    row), close their cluster: the module fixtures connected to it are torn down by then."""
    result = yield
    if _DASK_CLUSTER and _relative(item) in DASK_FILES and (
            nextitem is None or _relative(nextitem) not in DASK_FILES):
        _DASK_CLUSTER.pop().close()  # type: ignore[attr-defined]
    return result


def _relative(item: pytest.Item) -> str:
    return item.path.relative_to(REPO / "tests").as_posix()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def settings_factory(tmp_path: Path):  # type: ignore[no-untyped-def]
    from app.config import Settings

    def make(**overrides: object) -> Settings:
        values: dict[str, object] = {"data_dir": tmp_path / "store", "load_example": False,
                                     "warm_up": False,
                                     # TestClient's requests say Host: testserver
                                     "allowed_hosts": "testserver"}
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture
def client(settings_factory) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from app.main import create_app

    with TestClient(create_app(settings_factory()), raise_server_exceptions=False) as test_client:
        yield test_client
