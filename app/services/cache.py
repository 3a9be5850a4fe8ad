"""Results cached in the store per dataset and parameter set, computed once.

Concurrent requests for the same result share one computation: the first computes
while the others wait for it and then read what it stored ("single flight"), so
twenty users opening the same overview cost one bootstrap, not twenty.

What a computation freed goes back to the operating system
(:func:`app.services.tables.release_memory`) when the last request taking part in any
computation leaves, whether it computed or waited: handing it back while another
computation runs would only have that one fault the same pages in again.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from app.services.tables import release_memory
from app.store import Store

_flights: dict[str, tuple[threading.Lock, int]] = {}
_flights_guard = threading.Lock()
#: Whether a computation has ended since memory was last handed back (under the guard).
_freed = False


def cache_key(dataset_id: str, kind: str, **params: Any) -> str:
    """``<dataset_id>.<kind>.<hash of params>``: deleting the dataset deletes the entry."""
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode())
    return f"{dataset_id}.{kind}.{digest.hexdigest()[:20]}"


def cached(store: Store, key: str, compute: Callable[[], Any]) -> Any:
    """The stored document under ``key``, computing and storing it first if missing;
    while one caller computes it, the others with the same key wait for its result."""
    global _freed
    if store.has_document(key):
        return store.read_document(key)
    with _single_flight(key):
        if store.has_document(key):  # computed while this caller waited
            return store.read_document(key)
        try:
            result = compute()
        finally:  # a failed computation freed what it allocated too
            with _flights_guard:
                _freed = True
        store.write_document(key, result)
    return result


def settled(store: Store, key: str) -> Any | None:
    """The stored document under ``key``, waiting first for a computation of it under
    way (:func:`cached`); None when it is neither stored nor being computed, or when that
    computation failed. Never computes it."""
    if store.has_document(key):
        return store.read_document(key)
    with _flights_guard:
        computing = key in _flights
    if not computing:
        return None
    with _single_flight(key):  # the lock is free once the computation has ended
        return store.read_document(key) if store.has_document(key) else None


@contextmanager
def _single_flight(key: str) -> Iterator[None]:
    """Hold the lock of ``key``; the lock lives while someone holds or waits for it. The
    last to leave any flight hands back freed memory (module docstring)."""
    global _freed
    with _flights_guard:
        lock, users = _flights.get(key, (threading.Lock(), 0))
        _flights[key] = (lock, users + 1)
    try:
        with lock:
            yield
    finally:
        with _flights_guard:
            lock, users = _flights[key]
            if users == 1:
                del _flights[key]
            else:
                _flights[key] = (lock, users - 1)
            # the last to leave hands back what the computations freed: a waiter often
            # leaves after the one that computed (twenty identical 1.5M-row overview
            # requests kept 270-430 MiB more resident until a later computation ended alone)
            idle = not _flights and _freed
            if idle:
                _freed = False
        if idle:
            release_memory()
