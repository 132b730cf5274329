"""What the import tests compare: the whole store before and after, and a file's lines as read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import func, select

from kernelindex.ingest.jsonlines import block_lines, read_blocks
from kernelindex.store.reads.export import export_lines
from kernelindex.store.schema import metadata


def snapshot(store) -> tuple:
    """Row counts of every table and every exported line: equal snapshots mean nothing changed."""
    with store.begin() as conn:
        counts = {name: conn.scalar(select(func.count()).select_from(table)) for name, table in metadata.tables.items()}
        return counts, list(export_lines(conn))


def read_lines(path: Path, stream: BinaryIO) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line of a ``.jsonl`` or ``.jsonl.zst`` stream, as
    an import reads them."""
    for first, block in read_blocks(path, stream):
        for number, raw in block_lines(first, block):
            yield number, raw.decode("utf-8")
