"""The whole schema: every module that puts tables on the shared ``metadata``, imported once.

Alembic compares the migrated database against this (a new table module is added here too).
"""

from kernelindex.store import evidence_tables, serving_tables, tables  # noqa: F401  (imported for their tables)
from kernelindex.store.tables import metadata

__all__ = ["metadata"]
