"""One catalog line, from its text to the columns the writer stores, and many of them at once.

:func:`convert` parses a line, checks its shape, validates its record, recomputes every digest and
key and encodes its JSON columns. It never touches the store, so a large file's lines are
converted by worker processes while the importing process writes what they hand back
(:func:`converted`): an import then costs about what its writes cost, not the sum.
Lines come back in file order, so what is stored, counted and refused is the same either way.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import chain, count
from multiprocessing import current_process, get_context
from pathlib import Path
from typing import Any, BinaryIO

import rfc8785

from kernelindex.ingest.jsonlines import block_lines, parse_line, read_blocks
from kernelindex.ingest.problems import LineError
from kernelindex.ingest.serving import SERVING_TABLES
from kernelindex.ingest.shared_slots import Slots
from kernelindex.records.canonical import canonical_json, sha256_digest
from kernelindex.records.models import build_validators
from kernelindex.store import rows
from kernelindex.store.transparency.leaves import converted_leaf
from kernelindex.store.writer import encoded_part, part_problem, row_problem, with_json_encoded

# export table -> (store table, row converter, columns this version understands)
TABLES: dict[str, tuple[str, Callable[[dict], dict], frozenset[str]]] = {
    "sources": ("sources", rows.source_columns, frozenset("id slug kind name policy createdAt".split())),
    "projects": (
        "projects",
        rows.project_columns,
        frozenset("id slug name normalizedName canonicalUrl licenseExpression manifest createdAt".split()),
    ),
    "operations": (
        "operations",
        rows.operation_columns,
        frozenset("id slug family name schemaVersion semanticDigest manifest tags createdAt supersedesId".split()),
    ),
    "operation_aliases": ("operation_aliases", rows.alias_columns, frozenset({"operationId", "alias"})),
    "workloads": (
        "workloads",
        rows.workload_columns,
        frozenset(
            "id operationId workloadDigest schemaVersion manifest shapeSummary dtypes layoutKeys createdAt".split()
        ),
    ),
    "implementations": (
        "implementations",
        rows.implementation_columns,
        frozenset(
            "id projectId operationId slug implementationDigest sourceRevision language framework targetArchitectures "
            "licenseExpression sourceAvailable installable title installKind installCommand licenseDeclared manifest "
            "createdAt supersedesId".split()
        ),
    ),
    "benchmark_runs": (
        "runs",
        rows.catalog_run_columns,
        frozenset(
            "id runDigest implementationId workloadId sourceId status observedAt publishedAt hardwareVendor "
            "hardwareModel hardwareArchitecture driverMajor cudaMajor protocolKey environmentKey correctnessKey "
            "comparisonKey primaryMetric primaryValue primaryUnit sampleCount uncertaintyLow uncertaintyHigh reported "
            "reproducedByKernelindex independentReplicationCount sourceAvailable installable licenseExpression "
            "primaryStatistic hasRawEvidence sourceNative environmentSummary manifest supersedesId retractedAt "
            "retractionReason".split()
        ),
    ),
    "measurements": (
        "measurements",
        rows.measurement_columns,
        frozenset("id runId metric statistic unit value sampleCount".split()),
    ),
    "artifacts": (
        "artifacts",
        rows.artifact_columns,
        frozenset("id contentDigest kind mediaType sizeBytes storage uri license createdAt".split()),
    ),
    "record_events": (
        "record_events",
        rows.event_columns,
        frozenset("id comparisonKey runId previousRunId policyVersion cause reason at createdAt".split()),
    ),
    **SERVING_TABLES,
}

BLOCK = 1 << 20  # bytes of whole lines per task handed to a worker (~800 lines of a catalog export)
WINDOW = 3  # tasks in flight per worker: enough to keep it busy, few enough to bound memory
# bytes of a block, and of its converted lines (~1.35 times the text), that go through shared memory
# (shared_slots); a larger one goes through the pool's pipe
SLOT_BLOCK, SLOT_RESULT = 2 << 20, 4 << 20


@dataclass(slots=True)
class Line:
    """What one line became. ``table``/``columns``: a row for the writer, checked to fit its
    columns; ``problem``: (field, reason) of a refused line; ``serving_run``: a serving run's row,
    converted by the writer's process (its keys need the model and workload rows stored before
    it). The counts say what the line holds that this version does not model."""

    number: int
    table: str | None = None
    columns: dict[str, Any] | None = None
    problem: tuple[str | None, str] | None = None
    serving_run: dict[str, Any] | None = None
    source_slug: str | None = None
    foreign_table: str | None = None  # an export table this store does not model (kept as a foreign row)
    unknown_columns: tuple[str, ...] = ()  # "table.column" of each column this version does not know
    leaf: bytes | None = None  # the row's transparency-log leaf (raw digest), when its one JSON column decides it


REFUSALS = (LineError, rows.RowError, rfc8785.CanonicalizationError)  # what refuses one line, not the file


def refusal(exc: LineError | rows.RowError | rfc8785.CanonicalizationError) -> tuple[str | None, str]:
    """(field, reason) of a line refused with ``exc`` (one of :data:`REFUSALS`)."""
    if isinstance(exc, rfc8785.CanonicalizationError):
        return None, f"has no canonical JSON form: {exc}"
    return exc.field, exc.reason


def convert(number: int, text: str | bytes) -> Line:
    """What line ``number`` (its text, or that text's UTF-8 bytes) becomes."""
    line = Line(number)
    try:
        _convert(line, parse_line(number, text))
    except REFUSALS as exc:
        line.problem = refusal(exc)
    return line


def _convert(line: Line, obj: Any) -> None:
    if not isinstance(obj, dict) or not isinstance(obj.get("table"), str) or not isinstance(obj.get("row"), dict):
        wrong = "row" if isinstance(obj, dict) and isinstance(obj.get("table"), str) else "table"
        raise LineError(line.number, 'a catalog line is {"table": NAME, "row": {...}}', wrong)
    table, row = obj["table"], obj["row"]
    if table == "sources" and isinstance(row.get("slug"), str):
        line.source_slug = row["slug"]
    unknown = [f"(line).{extra}" for extra in sorted(obj.keys() - _LINE_KEYS)] if len(obj) > 2 else []
    known = TABLES.get(table)
    if known is None:
        line.unknown_columns = tuple(unknown)
        line.foreign_table = table
        line.table, line.columns = "foreign_rows", _foreign_row(table, row)
    else:
        store_table, convert_row, columns = known
        if extra := row.keys() - columns:
            unknown += [f"{table}.{name}" for name in sorted(extra)]
        line.unknown_columns = tuple(unknown)
        if table == "serving_runs":
            line.serving_run = row
            return
        line.table, line.columns = store_table, convert_row(row)
    if (bad := row_problem(line.table, line.columns, parts=False)) is not None:
        raise rows.RowError(*bad)
    if line.table == "runs":
        _checked_parts(line.columns)
    line.leaf = converted_leaf(line.table, line.columns)  # here, in a worker, not at the commit
    line.columns = with_json_encoded(line.table, line.columns)


_LINE_KEYS = frozenset({"table", "row"})


def _foreign_row(table: str, row: Any) -> dict[str, Any]:
    return {"table_name": table, "row_digest": sha256_digest(canonical_json(row)), "row": row}


def convert_block(first: int, block: bytes) -> list[Line]:
    """The lines of a block (see :func:`~kernelindex.ingest.jsonlines.read_blocks`), converted."""
    return [convert(number, text) for number, text in block_lines(first, block)]


_FIELDS = Line.__slots__


def convert_block_packed(first: int, block: bytes) -> bytes:
    """:func:`convert_block` as a worker hands it back: its lines' fields in ``marshal`` form, which
    writes and reads plain data (every value of a line came from JSON: dicts, lists, strings,
    numbers, bytes of encoded JSON) in about half the time pickle takes, each object shared by
    several lines (a block's protocol rows) once."""
    return marshal.dumps([tuple(getattr(line, name) for name in _FIELDS) for line in convert_block(first, block)])


def unpacked(packed: bytes) -> list[Line]:
    """The lines :func:`convert_block_packed` handed back."""
    return [Line(*fields) for fields in marshal.loads(packed)]


_PARTS: dict[tuple[str, str], dict[str, Any]] = {}  # (part, digest) -> that row, checked and encoded
_PARTS_MAX = 4096


def _checked_parts(columns: dict[str, Any]) -> None:
    """Check and encode a run's protocol and environment rows once per digest, and let every run
    naming that digest carry the one row: a catalog's thousands of runs name a handful of each,
    and marshal writes an object once however often a block's lines hold it (a sixth of what a
    worker sends back, otherwise). Keyed by digest alone, which the run's bundle was checked to
    match (rows.check_bundle), so an equal digest is an equal record and an equal row; its manifest
    text is the first the file gives (the same record with its keys in another order is the same
    record; each run keeps its own text in its own manifest). The writer only reads these rows."""
    for part, digest_column in (("protocol_row", "protocol_digest"), ("environment_row", "environment_digest")):
        row = columns[part]
        key = (part, row[digest_column])
        if (known := _PARTS.get(key)) is None:
            if (bad := part_problem(part, row)) is not None:
                raise rows.RowError(*bad)
            if len(_PARTS) >= _PARTS_MAX:
                _PARTS.clear()
            known = _PARTS[key] = encoded_part(row)
        columns[part] = known


WORKERS_ENV = "KERNELINDEX_IMPORT_WORKERS"


def worker_count() -> int:
    """Worker processes for a large file: $KERNELINDEX_IMPORT_WORKERS if set (0: none), else one per
    core, at most three (one core: none). The importing process needs no core of its own: it mostly
    waits, on SQLite and for the next result (on two cores, two workers import in ~0.8 of the time
    one takes: benchmarks/RESULTS.md). None off Linux (fork is how a worker starts with the
    validators already built; elsewhere lines are converted here) and in a daemonic process (which
    may not have children)."""
    if not sys.platform.startswith("linux") or current_process().daemon:
        return 0
    if (wanted := os.environ.get(WORKERS_ENV, "").strip()) != "":
        try:
            return max(0, int(wanted))
        except ValueError:
            raise ValueError(f"${WORKERS_ENV} must be a whole number of processes, not {wanted!r}") from None
    cores = len(os.sched_getaffinity(0))
    return min(3, cores) if cores > 1 else 0


Block = tuple[int, bytes, list[Line]]  # (number of its first line, its text, its lines converted)


def converted(path: Path, stream: BinaryIO, workers: int | None = None) -> Iterator[Block]:
    """Each block of the file with its lines converted, in order. A file of more than two full
    blocks is converted by ``workers`` processes (default :func:`worker_count`) while this one
    writes what they hand back; a short file (or no workers) is converted here. This process only
    cuts the text into blocks; the workers split, parse and convert them."""
    workers = worker_count() if workers is None else workers
    _PARTS.clear()  # each import stores a part as its own file first gives it (workers fork with this)
    blocks = read_blocks(path, stream, BLOCK, first_size=BLOCK // 16)  # the writer starts sooner
    head: list[tuple[int, bytes]] = []
    size = 0  # the first 2 MiB: a file that ends sooner is converted faster than workers start
    for first, block in blocks:
        head.append((first, block))
        if (size := size + len(block)) >= 2 * BLOCK:
            break
    if workers < 1 or size < 2 * BLOCK:
        for first, block in chain(head, blocks):
            yield first, block, convert_block(first, block)
        return
    # forked, not spawned: a worker starts at once with every module and validator of this process,
    # and with the memory blocks and lines are handed over in
    build_validators()
    slots = Slots(WINDOW * workers, block_size=SLOT_BLOCK, result_size=SLOT_RESULT)
    pool = ProcessPoolExecutor(workers, mp_context=get_context("fork"), initializer=_use_slots, initargs=(slots,))
    try:
        window: deque[_Task] = deque()
        pending = chain(head, blocks)
        handed = count()  # task k has slot k % slots.count: free again once the task before it there is taken
        while True:
            while len(window) < slots.count and (task := next(pending, None)) is not None:
                window.append(_Task.handed_to(pool, slots, next(handed) % slots.count, *task))
            if not window:
                return
            yield window.popleft().result()
    finally:  # also when the caller stops early (too many problems) or reading fails
        pool.shutdown(wait=True, cancel_futures=True)
        slots.close()


_SLOTS: Slots | None = None  # in a worker: the memory it shares with the importing process


def _use_slots(slots: Slots) -> None:
    """A worker's start: the slots it was forked with (handed over by fork, never pickled; a
    process importing two files at once gives each pool its own)."""
    global _SLOTS
    _SLOTS = slots


def convert_in_slot(first: int, slot: int, size: int) -> int | bytes:
    """:func:`convert_block_packed` of the block in ``slot`` (a worker's task): the result's size
    once written to the slot, or the result itself when it does not fit there."""
    assert _SLOTS is not None  # set as the worker started
    packed = convert_block_packed(first, _SLOTS.block(slot, size))
    return len(packed) if _SLOTS.put_result(slot, packed) else packed


class _Task:
    """A block handed to the workers (in its shared slot, or through the pipe when too large);
    converted here instead when the workers are gone (a worker killed, e.g. for memory, breaks the
    pool: the import goes on in this process rather than failing)."""

    __slots__ = ("first", "block", "future", "slots", "slot")

    def __init__(self, first: int, block: bytes, future: Future | None, slots: Slots, slot: int) -> None:
        self.first, self.block, self.future, self.slots, self.slot = first, block, future, slots, slot

    @classmethod
    def handed_to(cls, pool: ProcessPoolExecutor, slots: Slots, slot: int, first: int, block: bytes) -> _Task:
        try:
            if slots.put_block(slot, block):
                future = pool.submit(convert_in_slot, first, slot, len(block))
            else:
                future = pool.submit(convert_block_packed, first, block)
            return cls(first, block, future, slots, slot)
        except BrokenProcessPool:
            return cls(first, block, None, slots, slot)

    def result(self) -> Block:
        try:
            if self.future is not None:
                packed = self.future.result()
                if isinstance(packed, int):
                    packed = self.slots.result(self.slot, packed)
                return self.first, self.block, unpacked(packed)
        except BrokenProcessPool:
            pass
        return self.first, self.block, convert_block(self.first, self.block)
