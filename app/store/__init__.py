"""Embedded store: SQLite metadata + Parquet tables + JSON documents."""

from app.store.exceptions import NotFound
from app.store.sqlite import Record, Store, atomic_write, new_id, now

__all__ = ["NotFound", "Record", "Store", "atomic_write", "new_id", "now"]
