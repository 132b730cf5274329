"""The whole schema: every module that puts tables on the shared ``metadata``, imported once.

Alembic compares the migrated database against this (a new table module is added here too).
"""

from kernelindex.store import (  # noqa: F401  (imported for their tables)
    evidence_tables,
    generation,
    queue_tables,
    refresh_tables,
    schema_check,
    serving_tables,
    tables,
)
from kernelindex.store.tables import metadata

__all__ = ["metadata"]
