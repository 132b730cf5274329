"""Importing a KernelIndex catalog export (``.jsonl.zst``), streamed, in one transaction.

Every record is validated and every digest and key in the file recomputed; any refused line
makes the whole import fail with the list of problems, and the store is left as it was. Tables
this store does not model (newer ones) are kept as foreign rows and
re-exported; columns it does not know are kept in the stored row; both are counted. The lines
of a large file are converted by worker processes while this one writes
(:mod:`kernelindex.ingest.catalog_lines`).
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kernelindex.ingest.catalog_lines import REFUSALS, Line, converted, refusal
from kernelindex.ingest.problems import ImportFailed, ImportProblem, LineError
from kernelindex.store.database import Writable, bulk_settings
from kernelindex.store.refresh.writes import record_refresh
from kernelindex.store.serving.writes import serving_run_row
from kernelindex.store.transparency.leaves import known_leaves, remember_leaf
from kernelindex.store.writer import Writer

MAX_PROBLEMS = 50


@dataclass
class ImportReport:
    path: str
    lines: int = 0
    added: Counter = field(default_factory=Counter)
    present: Counter = field(default_factory=Counter)
    linked: Counter = field(default_factory=Counter)
    foreign_tables: Counter = field(default_factory=Counter)  # rows kept for tables not modelled
    unknown_columns: Counter = field(default_factory=Counter)  # "table.column" -> rows
    skipped: int = 0  # lines refused and left out (``skip_invalid``)
    checked_only: bool = False  # a dry run: everything validated, nothing stored
    upstream_skipped: Counter = field(default_factory=Counter)  # why -> upstream rows not imported
    source_slugs: set[str] = field(default_factory=set)  # the sources whose rows the file holds
    refused_report: str | None = None  # where the refused lines were written (``skip_invalid``)

    def absorb(self, writer: Writer) -> None:
        self.added.update(writer.added)
        self.present.update(writer.present)
        self.linked.update(writer.linked)


@dataclass(frozen=True)
class BadLines:
    """What to do with refused lines: refuse the file (the default), or leave them out and hand each
    to ``on_refused`` with its text; ``check`` validates everything and stores nothing."""

    skip_invalid: bool = False
    check: bool = False
    on_refused: Callable[[ImportProblem, str | None], None] | None = None


class _LineTexts:
    """The blocks of the lines the writer may still refuse (not yet written), for the refused-lines
    report: a line's text is cut from its block only when a report asks for it."""

    def __init__(self) -> None:
        self.blocks: list[tuple[int, bytes]] = []  # (number of its first line, text), in order
        self._split: tuple[int, list[bytes]] = (0, [])  # the block last cut into lines

    def keep(self, first: int, block: bytes, oldest_pending: int | None) -> None:
        """Add the next block, forgetting those whose lines are all written (their problems are
        collected by then)."""
        if oldest_pending is None:
            self.blocks.clear()
        else:  # a block is still needed while the next one starts after the oldest pending line
            while len(self.blocks) > 1 and self.blocks[1][0] <= oldest_pending:
                del self.blocks[0]
        self.blocks.append((first, block))

    def text(self, number: int | None) -> str | None:
        if number is None:
            return None
        for first, block in reversed(self.blocks):
            if first <= number:
                if self._split[0] != first:
                    self._split = (first, block.split(b"\n"))
                raw = self._split[1]
                return raw[number - first].decode("utf-8") if number - first < len(raw) else None
        return None


def import_catalog(
    store: Writable,
    path: Path,
    *,
    open_file: Callable[[Path], BinaryIO] | None = None,
    bad_lines: BadLines = BadLines(),
    origin: str | None = None,
    export_digest: str | None = None,
) -> ImportReport:
    """Import one export file; raises :class:`ImportFailed` (nothing stored) on any refused line,
    unless ``bad_lines.skip_invalid`` leaves refused lines out. A file that cannot be read to its end
    (truncated, not zstd) is refused whole under any policy. The sources the file holds are noted as
    refreshed from ``origin`` (the path unless given, e.g. a sync URL with its ``export_digest``)."""
    report = ImportReport(str(path), checked_only=bad_lines.check)
    name = str(path)
    skipping = bad_lines.skip_invalid and not bad_lines.check
    limit = None if bad_lines.check or skipping else MAX_PROBLEMS
    # a savepoint inside the store's transaction: a refused or checked file is rolled back alone,
    # and a use case that joined a larger transaction (services.imports) keeps its other steps
    with (
        _collector_paused(),
        store.begin(bulk=True) as conn,
        bulk_settings(conn),
        (open_file or _open_binary)(path) as stream,
    ):
        transaction = conn.begin_nested()
        writer = Writer(conn, sole=True)
        problems: list[ImportProblem] = []
        texts = _LineTexts()
        seen = 0  # writer problems already collected

        def refuse(problem: ImportProblem) -> None:
            problems.append(problem)
            if skipping and bad_lines.on_refused:
                bad_lines.on_refused(problem, texts.text(problem.line))

        def collect_writer_problems() -> None:
            nonlocal seen
            for p in writer.problems[seen:]:
                if skipping or not p.consequential:
                    refuse(ImportProblem(name, p.line, p.field, p.reason))
                else:
                    deferred.append(ImportProblem(name, p.line, p.field, p.reason))
            seen = len(writer.problems)

        def lines() -> Iterator[Line]:
            for first, block, converted_lines in converted(path, stream):
                texts.keep(first, block, writer.oldest_pending_line())
                yield from converted_lines

        deferred: list[ImportProblem] = []  # dangling references: usually the echo of a refused parent line
        known = known_leaves(conn)  # leaves the workers computed, for the log's append at the commit
        try:
            with writer.building_indexes_last():
                for line in lines():
                    number = line.number
                    report.lines += 1
                    _count(report, line)
                    if line.problem is not None:
                        refuse(ImportProblem(name, number, *line.problem))
                    elif line.serving_run is not None:
                        try:
                            writer.add("serving_runs", number, serving_run_row(writer, line.serving_run))
                        except REFUSALS as exc:
                            refuse(ImportProblem(name, number, *refusal(exc)))
                    else:
                        assert line.table is not None and line.columns is not None  # a converted row
                        writer.add(line.table, number, line.columns, fits=True)
                        if line.leaf is not None:
                            remember_leaf(known, line.table, line.columns, line.leaf)
                    if len(writer.problems) > seen:
                        collect_writer_problems()
                    if limit is not None and len(problems) + len(deferred) >= limit:
                        break
                writer.flush()
            collect_writer_problems()
        except LineError as exc:  # the file itself, not one line: refused whole
            transaction.rollback()
            raise ImportFailed([ImportProblem(name, exc.line, exc.field, exc.reason)]) from exc
        # one clear message beats a cascade: dangling references count only when nothing else went wrong
        if not problems:
            problems = deferred
        if problems and not skipping:
            transaction.rollback()
            problems.sort(key=lambda p: p.line or 0)
            raise ImportFailed(problems)
        report.skipped = len({p.line for p in problems})
        report.absorb(writer)
        if bad_lines.check:
            transaction.rollback()
        else:
            record_refresh(
                conn,
                report.source_slugs,
                origin or name,
                export_digest=export_digest,
                rows_added=sum(report.added.values()),
            )
            transaction.commit()
    return report


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the file is read: an import allocates millions of
    short-lived objects without cycles, and each full collection would walk every object the process
    holds (its modules, the batch in hand) for nothing (~10 % of an import). Resumed afterwards, so
    any cycle made meanwhile is collected then."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _open_binary(path: Path) -> BinaryIO:
    return open(path, "rb")


def _count(report: ImportReport, line: Line) -> None:
    if line.source_slug is not None:
        report.source_slugs.add(line.source_slug)
    for column in line.unknown_columns:
        report.unknown_columns[column] += 1
    if line.foreign_table is not None:
        report.foreign_tables[line.foreign_table] += 1
