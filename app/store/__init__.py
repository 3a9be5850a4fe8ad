"""Embedded store: SQLite metadata + Parquet tables + JSON documents."""

from app.store.exceptions import NotFound
from app.store.files import atomic_write
from app.store.sqlite import Record, Store, new_id, now

__all__ = ["NotFound", "Record", "Store", "atomic_write", "new_id", "now"]
