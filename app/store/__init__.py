"""Embedded store: SQLite metadata + Parquet tables + JSON documents."""

from app.store.sqlite import Record, Store, atomic_write, new_id, now

__all__ = ["Record", "Store", "atomic_write", "new_id", "now"]
