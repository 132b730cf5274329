"""The store: tables, migrations, idempotent append-only writes and the queries over them."""

from kernelindex.store.database import Store, open_store, resolve_url

__all__ = ["Store", "open_store", "resolve_url"]
