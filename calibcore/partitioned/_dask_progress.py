"""Dask passes that report progress as their partitions finish.

A pass of :mod:`calibcore.partitioned` reduces every partition to a small summary (the
*leaves*, one delayed task per partition and reduction) and merges them pairwise into
a few results. :func:`compute_reporting` computes those results as ``dask.compute``
would, on the scheduler it would use, and calls ``progress(done / n_leaves)`` as each
leaf finishes, so a caller's fraction moves during a pass and a cancel (the callback
raising, as in :mod:`calibcore._progress`) takes effect at the next finished partition:

* on a ``dask.distributed`` client, the results and the leaves are submitted as one graph
  (each partition is still read once and the merges run as their inputs arrive), the
  leaves' futures are followed with ``distributed.as_completed`` and released as they
  come; if the callback raises, or a partition fails, the results are cancelled and the
  leaves released before the exception propagates, so the scheduler drops every task
  of the pass not yet done. (Not the leaves cancelled: distributed cancels a key's
  dependents too and asserts that a client wants each of them, which the intermediate
  merges are not.)
* on dask's local schedulers (threads, processes, synchronous), a ``posttask`` callback
  given to this one ``dask.compute`` call counts the leaves: it runs in the calling
  thread between tasks, so raising from it stops the pass (tasks already running finish
  unused), and it sees no other thread's computation, as a registered
  ``dask.callbacks.Callback`` would.

Private: the public functions document their ``progress`` parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dask.delayed import Delayed
    from distributed import Client

Report = Callable[[float], None]


def compute_reporting(outputs: Sequence[Delayed], leaves: Sequence[Delayed],
                      progress: Report | None) -> tuple[Any, ...]:
    """``dask.compute(*outputs)``, calling ``progress(fraction)`` as each of ``leaves``
    (tasks of the outputs' graph) finishes; plain ``dask.compute`` without a callback.
    ``outputs`` are the ends of the graph (no task of it depends on them).

    Returns the same values as ``dask.compute(*outputs)``: the same tasks run, only
    their completion is followed.
    """
    import dask

    if progress is None or not leaves:
        return tuple(dask.compute(*outputs))
    client = _distributed_client()
    if client is None:
        return _on_local_scheduler(outputs, leaves, progress)
    return _on_cluster(client, outputs, leaves, progress)


def within(progress: Report | None, start: float, stop: float) -> Report | None:
    """``progress`` of a part of the work: its fraction mapped onto [start, stop]."""
    if progress is None:
        return None
    report = progress  # bound for the closure (mypy keeps the Optional otherwise)
    # exactly start at 0 and stop at 1, so consecutive parts meet
    return lambda fraction: report(start * (1.0 - fraction) + stop * fraction)


def _distributed_client() -> Client | None:
    """The ``dask.distributed`` client that ``dask.compute`` would use, if it would."""
    from dask.base import get_scheduler

    client = getattr(get_scheduler(), "__self__", None)  # client.get, bound
    if client is None:
        return None
    from distributed import Client

    return client if isinstance(client, Client) else None


def _on_cluster(client: Client, outputs: Sequence[Delayed], leaves: Sequence[Delayed],
                progress: Report) -> tuple[Any, ...]:
    from distributed import as_completed

    futures = client.compute([*outputs, *leaves])
    results, waiting = futures[:len(outputs)], set(futures[len(outputs):])
    del futures  # a leaf's summary may be freed once merged and reported
    n_leaves = len(waiting)
    try:
        for done, future in enumerate(as_completed(list(waiting)), start=1):
            if future.status != "finished":
                future.result()  # raises the partition's error
            progress(done / n_leaves)
            waiting.discard(future)
        return tuple(client.gather(results))
    except BaseException:
        client.cancel(results)
        for future in waiting:
            future.release()
        raise


def _on_local_scheduler(outputs: Sequence[Delayed], leaves: Sequence[Delayed],
                        progress: Report) -> tuple[Any, ...]:
    import dask

    keys = {leaf.key for leaf in leaves}
    done = 0

    def finished(key: Any, result: Any, graph: Any, state: Any, worker_id: Any) -> None:
        nonlocal done
        if key in keys:
            done += 1
            progress(done / len(keys))

    # (start, start_state, pretask, posttask, finish), for this call only
    return tuple(dask.compute(*outputs, callbacks=[(None, None, None, finished, None)]))
