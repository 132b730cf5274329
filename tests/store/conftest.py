"""Every test here runs against SQLite and a real PostgreSQL (see tests/pgserver.py)."""

from store_fixtures import db_url, empty_db_url, store  # noqa: F401  (fixtures)
