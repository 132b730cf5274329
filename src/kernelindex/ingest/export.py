"""Writing the store back out as a catalog export (``.jsonl.zst``), in the public format.

Each stored row is written as it came (``export_row`` with its record put back), parents before
children and in arrival order, so exporting an imported file gives the same lines, byte for byte.
Runs that came as bundles get their links and keys from the columns once those are known.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from kernelindex.ingest.jsonlines import js_dumps
from kernelindex.store.database import Store
from kernelindex.store.reads.export import export_lines


def export_catalog(store: Store, path: Path, *, on_row: Callable[[], None] | None = None) -> Counter:
    """Write the whole store to ``path`` (written beside it, then renamed: never half a file)."""
    import zstandard  # here: the site imports this module as it starts, and writes an export on request only

    counts: Counter = Counter()
    partial = path.with_name(path.name + ".partial")
    try:
        with store.read() as conn, open(partial, "wb") as raw:
            with zstandard.ZstdCompressor(level=10).stream_writer(raw, closefd=False) as out:
                for table, row in export_lines(conn):
                    out.write((js_dumps({"table": table, "row": row}) + "\n").encode("utf-8"))
                    counts[table] += 1
                    if on_row:
                        on_row()
        os.replace(partial, path)
    except BaseException:  # a full disk, a failed read, ^C: no half-written file is left behind
        partial.unlink(missing_ok=True)
        raise
    return counts
