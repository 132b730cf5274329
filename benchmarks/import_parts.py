"""Three parts of a catalog import, each against the way it was done before, in alternating runs in
one process (ratios of medians, so the host's drift cancels out):

- reading: cutting the export into blocks with 64 KiB compressed reads against 1 MiB reads;
- hand-back: a block's converted lines (each as the tuple of its fields) written and read with
  marshal against pickle, for all of the export's blocks;
- writes: every converted line into a fresh store with the indexes of empty tables built after
  their rows (``Writer.building_indexes_last``) against kept up to date row by row.

    .venv/bin/python benchmarks/import_parts.py [EXPORT.jsonl.zst] [--repeat 7]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import marshal
import pickle
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kernelindex.ingest import jsonlines
from kernelindex.ingest.catalog_lines import BLOCK, Line, convert_block
from kernelindex.records.models import build_validators
from kernelindex.store import open_store
from kernelindex.store.database import bulk_settings
from kernelindex.store.writer import Writer

DEFAULT_EXPORT = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "kernelindex-catalog-2026-08-15-167a1d6d.jsonl.zst"
)


def _seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def _read(export: Path, read_size: int) -> float:
    jsonlines.READ = read_size
    with open(export, "rb") as stream:
        return _seconds(lambda: list(jsonlines.read_blocks(export, stream, BLOCK, first_size=BLOCK // 16)))


def _hand_back(fields: list[list[tuple]], codec) -> float:
    """Write every block's lines as a worker does, then read them back into ``Line`` objects."""
    start = time.perf_counter()
    written = [codec.dumps(block) for block in fields]
    for data in written:
        [Line(*line) for line in codec.loads(data)]
    return time.perf_counter() - start


def _writes(lines: list, build_last: bool, folder: Path, n: int) -> float:
    db = f"sqlite:///{folder / f'w{n}.db'}"
    open_store(db).close()
    store = open_store(db)
    work = [(line.number, line.table, copy.copy(line.columns)) for line in lines if line.columns is not None]
    start = time.perf_counter()
    with store.begin() as conn, bulk_settings(conn):
        writer = Writer(conn, sole=True)
        with writer.building_indexes_last() if build_last else contextlib.nullcontext():
            for number, table, columns in work:
                writer.add(table, number, columns, fits=True)
            writer.flush()
    seconds = time.perf_counter() - start
    store.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", nargs="?", type=Path, default=DEFAULT_EXPORT)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    build_validators()
    read_size = jsonlines.READ
    with open(args.export, "rb") as stream:
        blocks = list(jsonlines.read_blocks(args.export, stream, BLOCK))
    converted = [convert_block(first, block) for first, block in blocks]
    lines = [line for block_lines in converted for line in block_lines]
    fields = [[tuple(getattr(line, name) for name in Line.__slots__) for line in block] for block in converted]
    figures: dict[str, list[float]] = {name: [] for name in ("read 64K", "read 1M", "marshal", "pickle")}
    figures |= {"writes, indexes last": [], "writes, indexes kept": []}
    gc.disable()  # as during an import
    with tempfile.TemporaryDirectory() as folder:
        for n in range(args.repeat):
            for new in (True, False) if n % 2 else (False, True):
                name = "read 64K" if new else "read 1M"
                figures[name].append(_read(args.export, read_size if new else 1 << 20))
                figures["marshal" if new else "pickle"].append(_hand_back(fields, marshal if new else pickle))
                figures["writes, indexes last" if new else "writes, indexes kept"].append(
                    _writes(lines, new, Path(folder), 2 * n + new)
                )
    jsonlines.READ = read_size
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(f"{args.export.name}: {len(lines)} lines in {len(blocks)} blocks, {args.repeat} alternating runs, medians")
    for new, old in (("read 64K", "read 1M"), ("marshal", "pickle"), ("writes, indexes last", "writes, indexes kept")):
        print(f"  {new:<22}{median[new]:.3f} s   {old:<22}{median[old]:.3f} s   ratio {median[new] / median[old]:.2f}")


if __name__ == "__main__":
    main()
