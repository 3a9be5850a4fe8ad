"""Cached results: computed once per key, even when many requests ask at the same time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.main import create_app
from app.services import cache
from app.store import Store


def test_concurrent_callers_of_one_key_share_one_computation(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    calls = []
    entered = threading.Event()

    def compute() -> dict[str, int]:
        calls.append(threading.get_ident())
        entered.set()
        time.sleep(0.3)  # long enough for every other caller to arrive and wait
        return {"value": 42}

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(lambda _: cache.cached(store, "d.kind.1", compute), range(12)))
    assert results == [{"value": 42}] * 12
    assert len(calls) == 1
    assert cache._flights == {}  # no lock is left behind


def test_different_keys_do_not_wait_for_each_other(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    release = threading.Event()

    def blocked() -> int:
        release.wait(10)
        return 1

    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(cache.cached, store, "d.kind.slow", blocked)
        began = time.perf_counter()
        assert cache.cached(store, "d.kind.fast", lambda: 2) == 2
        assert time.perf_counter() - began < 1.0
        release.set()
        assert slow.result() == 1


def test_a_failed_computation_is_not_cached_and_the_next_caller_retries(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")

    def failing() -> int:
        raise ValueError("boom")

    for _ in range(2):
        try:
            cache.cached(store, "d.kind.x", failing)
        except ValueError:
            pass
    assert not store.has_document("d.kind.x")
    assert cache.cached(store, "d.kind.x", lambda: 3) == 3
    assert cache._flights == {}


def test_twenty_identical_overview_requests_compute_the_intervals_once(
        settings_factory, shared_data, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from app.services import diagnostics

    computed = []
    original = diagnostics.global_metrics

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        computed.append(kwargs.get("n_bootstrap"))
        return original(*args, **kwargs)

    monkeypatch.setattr(diagnostics, "global_metrics", counting)
    with TestClient(create_app(settings_factory(compute_slots=4))) as client:
        with open(shared_data / "digits_svm.csv", "rb") as stream:
            dataset = client.post("/api/v1/datasets",
                                  files={"file": ("digits.csv", stream)}).json()["id"]
        url = f"/api/v1/datasets/{dataset}/metrics?n_bootstrap=50"
        with ThreadPoolExecutor(20) as pool:
            responses = list(pool.map(lambda _: client.get(url), range(20)))
    assert {r.status_code for r in responses} == {200}
    assert len({r.text for r in responses}) == 1
    assert computed == [50]


def _held(outcome: Callable[[], Any]) -> tuple[Callable[[], Any], threading.Event,
                                                 threading.Event]:
    """A computation that says it has started (``entered``), waits for ``release``, then
    returns (or raises) what ``outcome`` does."""
    entered, release = threading.Event(), threading.Event()

    def compute() -> Any:
        entered.set()
        release.wait(10)
        return outcome()

    return compute, entered, release


def test_settled_waits_for_a_computation_under_way_and_never_computes(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    assert cache.settled(store, "d.kind.none") is None  # neither stored nor being computed
    compute, entered, release = _held(lambda: {"value": 7})
    with ThreadPoolExecutor(2) as pool:
        computing = pool.submit(cache.cached, store, "d.kind.busy", compute)
        assert entered.wait(10)
        waiting = pool.submit(cache.settled, store, "d.kind.busy")
        time.sleep(0.2)
        assert not waiting.done()  # it waits for the computation rather than answering None
        release.set()
        assert waiting.result(10) == {"value": 7}
        assert computing.result(10) == {"value": 7}
    assert cache.settled(store, "d.kind.busy") == {"value": 7}  # stored: read at once
    assert cache._flights == {}


def test_settled_gives_none_when_the_computation_under_way_fails(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")

    def boom() -> int:
        raise ValueError("boom")

    failing, entered, release = _held(boom)
    with ThreadPoolExecutor(2) as pool:
        computing = pool.submit(cache.cached, store, "d.kind.fails", failing)
        assert entered.wait(10)
        waiting = pool.submit(cache.settled, store, "d.kind.fails")
        time.sleep(0.1)
        release.set()
        assert waiting.result(10) is None
        assert isinstance(computing.exception(10), ValueError)
    assert cache._flights == {}


def test_memory_goes_back_when_no_other_computation_is_under_way(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a computed result hands the freed memory back, unless another computation still
    # runs (it would only fault the same pages in again); a cached read does nothing
    store = Store(tmp_path / "store")
    released = []
    monkeypatch.setattr(cache, "release_memory", lambda: released.append(1))
    cache.cached(store, "d.kind.1", lambda: {"value": 1})
    assert released == [1]
    cache.cached(store, "d.kind.1", lambda: {"value": 2})  # stored: not computed
    assert released == [1]
    slow, other_started, finish = _held(lambda: {"value": 3})
    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(cache.cached, store, "d.kind.2", slow)
        assert other_started.wait(5)
        cache.cached(store, "d.kind.3", lambda: {"value": 4})
        assert released == [1]  # d.kind.2 is still being computed
        finish.set()
        assert other.result() == {"value": 3}
    assert released == [1, 1]


def test_memory_goes_back_when_a_request_that_waited_leaves_last(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # twenty identical requests: one computes, the others wait and read its result; the
    # last of them to leave hands the memory back, even when it is one that waited
    store = Store(tmp_path / "store")
    released = []
    monkeypatch.setattr(cache, "release_memory", lambda: released.append(dict(cache._flights)))
    computed = threading.Event()
    read = store.read_document

    def read_after_the_computing_request_left(key: str) -> Any:
        assert computed.wait(10)
        return read(key)

    monkeypatch.setattr(store, "read_document", read_after_the_computing_request_left)
    compute, entered, finish = _held(lambda: {"value": 5})
    with ThreadPoolExecutor(2) as pool:
        computing = pool.submit(cache.cached, store, "d.kind.shared", compute)
        assert entered.wait(10)
        waiting = pool.submit(cache.cached, store, "d.kind.shared", lambda: {"value": 6})
        deadline = time.monotonic() + 10
        while cache._flights.get("d.kind.shared", (None, 0))[1] < 2:  # the waiter is in
            assert time.monotonic() < deadline
            time.sleep(0.01)
        finish.set()
        assert computing.result(10) == {"value": 5}
        assert released == []  # the waiting request is still in the flight
        computed.set()
        assert waiting.result(10) == {"value": 5}
    assert released == [{}]  # once, when nobody was left in any flight
    assert cache._flights == {}


def test_a_runner_reports_idle_after_its_last_running_job() -> None:
    from app.jobs import JobRunner

    idle = threading.Event()
    runner = JobRunner(workers=1, on_idle=idle.set)
    job = runner.submit("test", lambda progress: 7)
    assert idle.wait(5)
    assert job.result == 7 and job.status == "succeeded"
