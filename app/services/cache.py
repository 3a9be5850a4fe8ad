"""Results cached in the store per dataset and parameter set."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from app.store import Store


def cache_key(dataset_id: str, kind: str, **params: Any) -> str:
    """``<dataset_id>.<kind>.<hash of params>``: deleting the dataset deletes the entry."""
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode())
    return f"{dataset_id}.{kind}.{digest.hexdigest()[:20]}"


def cached(store: Store, key: str, compute: Callable[[], Any]) -> Any:
    """The stored document under ``key``, computing and storing it first if missing."""
    if store.has_document(key):
        return store.read_document(key)
    result = compute()
    store.write_document(key, result)
    return result
