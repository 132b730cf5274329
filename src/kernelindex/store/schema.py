"""The whole schema: every module that puts tables on the shared ``metadata``, imported once.

Alembic compares the migrated database against this (a new table module is added here too).
"""

from kernelindex.store import generation, schema_check, tables  # noqa: F401  (imported for their tables)
from kernelindex.store.evidence import tables as evidence_tables  # noqa: F401
from kernelindex.store.queue import tables as queue_tables  # noqa: F401
from kernelindex.store.refresh import tables as refresh_tables  # noqa: F401
from kernelindex.store.serving import tables as serving_tables  # noqa: F401
from kernelindex.store.tables import metadata
from kernelindex.store.transparency import tables as log_tables  # noqa: F401

__all__ = ["metadata"]
