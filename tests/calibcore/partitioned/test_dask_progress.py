"""Dask passes report progress per finished partition (calibcore.partitioned._dask_progress): on a
distributed client (in-process, eight threads) and on dask's local scheduler, with the
same results as without a callback; a callback that raises stops the pass."""

from __future__ import annotations

import itertools
import logging
import operator
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import dask
import dask.dataframe as dd
import pytest
from dask.distributed import Client

from calibcore.exceptions import CalibrationInputError
from calibcore.partitioned import partitioned_variables
from calibcore.partitioned._dask_progress import _distributed_client, compute_reporting
from calibcore.partitioned.measures import (
    _tree,
    partition_classes,
    partitioned_equal_mass,
    partitioned_summaries,
    partitioned_summary,
)
from tests.calibcore.partitioned.test_partitioned import table

N_PARTITIONS = 8
#: Set to let the partitions that wait for it finish (module level: tasks pickled by
#: reference run in this process on an in-process cluster, and share it).
RELEASE = threading.Event()
FINISHED: list[int] = []


class Stop(Exception):
    """What the cancelling callbacks raise (a job raises JobCancelled)."""


@pytest.fixture(params=["distributed", "local"])
def engine(request) -> Iterator[str]:
    if request.param == "local":
        assert _distributed_client() is None
        yield "local"
        return
    with Client(processes=False, n_workers=1, threads_per_worker=N_PARTITIONS,
                dashboard_address=":0") as client:
        assert _distributed_client() is client
        yield "distributed"


def frame() -> dd.DataFrame:
    rows = table(4_000, ["a", "b", "c"], seed=11)
    rows["x"] = rows["p_a"].round(3) * 7.0
    return dd.from_pandas(rows, npartitions=N_PARTITIONS)


COLUMNS = ["p_a", "p_b", "p_c"]
PASSES: dict[str, tuple[Callable[..., Any], int]] = {
    # what is computed, and its passes over the partitions
    "classes": (lambda data, **kw: partition_classes(data, "y", COLUMNS, **kw), 1),
    "summary": (lambda data, **kw: partitioned_summary(data, "y", COLUMNS, list("abc"),
                                                       **kw), 1),
    "summaries": (lambda data, **kw: partitioned_summaries(data, "y", COLUMNS, list("abc"),
                                                           **kw), 1),
    "equal_mass": (lambda data, **kw: partitioned_equal_mass(data, "y", COLUMNS,
                                                             list("abc"), **kw), 3),
    "variables": (lambda data, **kw: partitioned_variables(data, "y", COLUMNS, list("abc"),
                                                           ["x"], n_points=50, **kw), 3),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PASSES))
def test_every_partition_moves_the_fraction_and_the_result_is_the_same(engine, name) -> None:
    """At least one report per partition and pass, strictly increasing, ending at 1; the
    result pickles to the same bytes as without a callback (the same tasks ran)."""
    function, n_passes = PASSES[name]
    data = frame()
    fractions: list[float] = []
    reported = function(data, progress=fractions.append)
    assert pickle.dumps(reported) == pickle.dumps(function(data))
    assert len(fractions) >= n_passes * N_PARTITIONS
    assert all(b > a for a, b in itertools.pairwise(fractions)), fractions
    assert fractions[-1] == 1.0 and 0.0 < fractions[0]


def wait_past_second(index: int) -> int:
    if index >= 2:
        RELEASE.wait(60)  # a pass that waited for it would finish these after a minute
    FINISHED.append(index)
    return index


def test_a_raising_callback_on_a_cluster_stops_the_pass_and_cancels_its_tasks(
        caplog) -> None:
    """Partitions 2 to 7 wait until released: the pass still stops at the callback's
    exception after the second partition, without waiting for the others; its tasks
    (pairwise merges as in every pass) are dropped by the client and then the
    scheduler, which logs no error."""
    with Client(processes=False, n_workers=1, threads_per_worker=N_PARTITIONS,
                dashboard_address=":0") as client:
        leaves = [dask.delayed(wait_past_second)(index) for index in range(N_PARTITIONS)]
        fractions: list[float] = []

        def cancelling(fraction: float) -> None:
            fractions.append(fraction)
            if len(fractions) == 2:
                raise Stop

        RELEASE.clear()
        FINISHED.clear()
        try:
            with pytest.raises(Stop):
                compute_reporting([_tree(operator.add, leaves)], leaves, cancelling)
            assert fractions == [1 / N_PARTITIONS, 2 / N_PARTITIONS]
            assert_released(client)
            assert sorted(FINISHED) == [0, 1]
        finally:
            RELEASE.set()
    assert not errors_logged(caplog)


def test_a_failing_partition_stops_the_pass_with_its_error(caplog) -> None:
    """As without a callback: the partition's own exception, and nothing left behind."""
    rows = table(400, ["a", "b"], seed=2)
    rows.loc[250, "y"] = "c"
    with Client(processes=False, n_workers=1, threads_per_worker=2,
                dashboard_address=":0") as client:
        with pytest.raises(CalibrationInputError, match="not classes"):
            partitioned_summary(dd.from_pandas(rows, npartitions=N_PARTITIONS), "y",
                                ["p_a", "p_b"], ["a", "b"], progress=lambda fraction: None)
        assert_released(client)
    assert not errors_logged(caplog, but="distributed.worker")  # which reports the failure


def errors_logged(caplog: pytest.LogCaptureFixture, but: str = "") -> list[logging.LogRecord]:
    """The test's records of level ERROR or above, except those of the logger ``but`` and
    asyncio's report of a future that distributed's batched sends left unretrieved: their
    wait for the next batch (tornado's ``with_timeout``, whose error says "Timeout") can time
    out just as a closed client's event loop stops, and asyncio reports the future whenever
    it is collected, in whichever test is running then (seen once, under load)."""
    return [record for record in caplog.records
            if record.levelno >= logging.ERROR and record.name != but
            and not (record.name == "asyncio"
                     and "exception=TimeoutError('Timeout')" in record.getMessage())]


def assert_released(client: Client) -> None:
    """Neither the client nor the scheduler holds a task (they hear of it in batches)."""
    deadline = time.monotonic() + 30
    while True:
        tasks = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks))
        if not client.futures and not tasks:
            return
        assert time.monotonic() < deadline, (client.futures, tasks)
        time.sleep(0.05)


def test_a_raising_callback_stops_the_local_scheduler_between_tasks() -> None:
    """On the synchronous scheduler the partitions run one by one: none runs after the
    callback raised."""
    RELEASE.set()
    FINISHED.clear()
    leaves = [dask.delayed(wait_past_second)(index) for index in range(N_PARTITIONS)]

    def cancelling(fraction: float) -> None:
        if fraction >= 2 / N_PARTITIONS:
            raise Stop

    with dask.config.set(scheduler="synchronous"), pytest.raises(Stop):
        compute_reporting([dask.delayed(sum)(leaves)], leaves, cancelling)
    assert len(FINISHED) == 2

