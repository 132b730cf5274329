"""Every test here runs against SQLite and a real PostgreSQL (see tests/pgserver.py)."""

import pytest

from catalog_kit import write_catalog
from kernelindex.ingest.catalog import import_catalog
from store_fixtures import db_url, store  # noqa: F401  (fixtures)


@pytest.fixture
def loaded(store, tmp_path):  # noqa: F811
    """A store holding a small valid catalog, for tests that check a refused import leaves it as it was."""
    import_catalog(store, write_catalog(tmp_path / "good.jsonl.zst"))
    return store
