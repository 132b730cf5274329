"""Files an importer reads whole (run bundles, trace files, upstream snapshots), read only up to a
size that fits in memory: past it the file is refused with its name, not read until a MemoryError
ends the import. Catalog exports are streamed instead and have no such limit."""

from __future__ import annotations

from pathlib import Path

from kernelindex.ingest.problems import ImportFailed, ImportProblem

MAX_WHOLE_FILE = 256 << 20  # bytes: the upstream snapshots and run bundles seen so far are under 10 MiB


def read_whole(path: Path) -> bytes:
    """The bytes of ``path``; :class:`ImportFailed` naming it when it holds more than
    :data:`MAX_WHOLE_FILE` (read with a bound, so a file that grows, or a device, is refused too)."""
    with open(path, "rb") as f:
        data = f.read(MAX_WHOLE_FILE + 1)
    if len(data) > MAX_WHOLE_FILE:
        reason = f"more than {MAX_WHOLE_FILE} bytes, the most a file read whole may hold (catalog exports stream)"
        raise ImportFailed([ImportProblem(str(path), None, None, reason)])
    return data
