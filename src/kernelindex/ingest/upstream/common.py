"""What every upstream importer shares: provenance, record building, reading, refusing and storing.

An importer reads upstream's own files into :class:`Records` (plain v1alpha1 records, each
validated as it is built), raising :class:`UpstreamError` naming file, line and field on
anything it cannot read. :func:`store_records` then writes them in one transaction through the
store's writer, under a source row whose policy carries upstream's URL, terms and licence.
Every record carries its provenance in metadata (which never enters a digest): ``sourceRefs``
with the upstream URL and labels ``source``, ``retrieved_at`` and ``license``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex import API_VERSION
from kernelindex.ingest.catalog import ImportReport
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.ingest.whole_files import read_whole
from kernelindex.records.canonical import digest
from kernelindex.records.errors import RecordError
from kernelindex.records.models import dump_record, parse_record
from kernelindex.records.names import UPSTREAM_NAME_LIMIT, slug
from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.records.strict_json import loads_strict


class UpstreamError(Refusal):
    """One thing upstream's file does not say the way the importer needs it."""

    kind = RefusalKind.INVALID

    def __init__(self, file: str | Path, line: int | None, field: str | None, reason: str) -> None:
        self.problem = ImportProblem(str(file), line, field, reason)
        super().__init__(str(self.problem))


@dataclass(frozen=True)
class Provenance:
    """Where records came from: the source row they are stored under and the labels each carries."""

    slug: str
    kind: str
    name: str
    url: str
    license: str
    terms: str
    attribution: str | None = None
    retrieved_at: str = ""

    def policy(self) -> dict[str, Any]:
        policy = {"url": self.url, "terms": self.terms, "license": self.license}
        return policy | ({"attribution": self.attribution} if self.attribution else {})

    def stamp(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record with its provenance in metadata (labels source, retrieved_at, license; the URL
        in sourceRefs); metadata never enters a digest, so the record's identity is unchanged."""
        meta = dict(record["metadata"])
        labels = {"source": self.slug, "retrieved_at": self.retrieved_at, "license": self.license[:200]}
        meta["labels"] = {**labels, **(meta.get("labels") or {})}
        meta["sourceRefs"] = meta.get("sourceRefs") or [{"url": self.url}]
        return {**record, "metadata": meta}


def retrieved_at(path: Path) -> str:
    """When a snapshot was taken: the file's modification time (upstream files carry none)."""
    moment = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def iso_time(value: Any, file: Path, line: int | None, field_: str) -> str:
    """Upstream's time (ISO-8601; naive means UTC) in the records' form, ``...T..:..:..mmmZ``."""
    if not isinstance(value, str):
        raise UpstreamError(file, line, field_, f"expected an ISO-8601 time, got {_short(value)}")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        raise UpstreamError(file, line, field_, f"not an ISO-8601 time: {_short(value)}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _short(value: Any) -> str:
    return repr(value)[:60]


def need(obj: Any, key: str, kinds: type | tuple[type, ...], file: Path, line: int | None, where: str = "") -> Any:
    """``obj[key]`` if present and of the right JSON type, else an error naming the field."""
    name = f"{where}.{key}" if where else key
    if not isinstance(obj, dict) or key not in obj:
        raise UpstreamError(file, line, name, "required field is missing")
    value = obj[key]
    kinds_t = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(value, bool) and bool not in kinds_t or not isinstance(value, kinds_t):
        wanted = " or ".join(
            {
                int: "an integer",
                float: "a number",
                str: "a string",
                bool: "true or false",
                dict: "an object",
                list: "a list",
            }.get(k, k.__name__)
            for k in kinds_t
        )
        raise UpstreamError(file, line, name, f"expected {wanted}, got {_short(value)}")
    return value


def optional_text(obj: dict, key: str, file: Path, line: int | None, where: str = "") -> str | None:
    """``obj[key]`` if a string, None if absent, null or empty; any other value is an error naming the field."""
    value = obj.get(key)
    if value is None or value == "":
        return None
    return need(obj, key, str, file, line, where)


def snapshot_files(path: Path, pattern: str, *, recursive: bool = False) -> list[Path]:
    """The files named ``pattern`` in the folder ``path`` (``recursive``: at any depth), sorted, or
    ``[path]`` when it is a file. A folder with none is refused, naming it: there is nothing to
    import, and no file to date the snapshot by."""
    if not path.is_dir():
        return [path]
    files = sorted(path.rglob(pattern) if recursive else path.glob(pattern))
    if not files:
        raise holds_none(path, pattern)
    return files


def holds_none(folder: Path, pattern: str) -> UpstreamError:
    """The refusal of a folder with no file named ``pattern`` to import."""
    return UpstreamError(folder, None, None, f"holds no {pattern} files")


def read_text(path: Path) -> str:
    """A whole file as UTF-8 text; one that cannot be read or is not UTF-8 is refused, naming it."""
    try:
        return read_whole(path).decode("utf-8")
    except OSError as exc:
        raise UpstreamError(path, None, None, f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UpstreamError(path, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_json(path: Path) -> Any:
    """A whole JSON document; a cut-off or malformed file names where it broke."""
    text = read_text(path)
    if not text.strip():
        raise UpstreamError(path, None, None, "the file is empty")
    try:
        return loads_strict(text)
    except json.JSONDecodeError as exc:
        reason = f"malformed or truncated JSON: {exc.msg} (column {exc.colno})"
        raise UpstreamError(path, exc.lineno, None, reason) from None
    except ValueError as exc:
        raise UpstreamError(path, None, None, f"malformed JSON: {exc}") from None


def read_json_lines(path: Path) -> list[tuple[int, Any]]:
    out = []
    for number, raw in enumerate(read_whole(path).splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            out.append((number, loads_strict(raw.decode("utf-8"))))
        except (ValueError, UnicodeDecodeError) as exc:
            reason = f"malformed or truncated JSON line: {getattr(exc, 'msg', exc)}"
            raise UpstreamError(path, number, None, reason) from None
    if not out:
        raise UpstreamError(path, None, None, "the file is empty (no JSON lines)")
    return out


def meta(name: str, title: str | None = None, url: str | None = None, **extra: Any) -> dict[str, Any]:
    """Record metadata: a slug name, a title, the upstream page it describes, anything else given."""
    out: dict[str, Any] = {"name": slug(name, limit=UPSTREAM_NAME_LIMIT)}
    if title:
        out["title"] = str(title)[:200]
    if url:
        out["sourceRefs"] = [{"url": url}]
    return out | {k: v for k, v in extra.items() if v}


def record(kind: str, spec: dict[str, Any], metadata: dict[str, Any], file: Path, line: int | None) -> dict[str, Any]:
    """A validated record (refused with file:line and the record's field when upstream's data doesn't fit)."""
    try:
        return dump_record(
            parse_record({"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}, where=kind)
        )
    except RecordError as exc:
        path, reason = exc.problems[0] if exc.problems else ("", str(exc))
        raise UpstreamError(file, line, f"{kind}.{path}" if path else kind, reason) from None


@dataclass
class Records:
    """What one upstream import stores: parents (projects, operations, workloads, implementations) and runs."""

    provenance: Provenance
    parents: list[tuple[int | None, dict[str, Any]]] = field(default_factory=list)
    runs: list[tuple[int | None, dict[str, Any]]] = field(default_factory=list)  # {run, protocol, environment}
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> rows upstream has that we do not import
    lines: int = 0
    _seen: set[str] = field(default_factory=set)

    def parent(self, line: int | None, rec: dict[str, Any]) -> str:
        """Add a parent record once; returns its digest."""
        key = digest(rec)
        if key not in self._seen:
            self._seen.add(key)
            self.parents.append((line, self.provenance.stamp(rec)))
        return key

    def run(self, line: int | None, run: dict, protocol: dict, environment: dict) -> None:
        stamp = self.provenance.stamp
        self.runs.append((line, {"run": stamp(run), "protocol": stamp(protocol), "environment": stamp(environment)}))

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def store_records(store, records: Records, name: str, *, check: bool = False) -> ImportReport:
    """Store everything in one transaction: the caller's when it holds one (a use case's
    :class:`~kernelindex.store.database.JoinedStore`), under a savepoint so that nothing of this
    path stays when anything is refused, or when ``check``."""
    from kernelindex.store.rows import RowError
    from kernelindex.store.writer import Writer

    report = ImportReport(name, lines=records.lines, checked_only=check)
    prov = records.provenance
    problems: list[ImportProblem] = []
    with store.begin() as conn:
        transaction = conn.begin_nested()
        writer = Writer(conn)
        writer.ensure_source(prov.slug, prov.kind, prov.name, prov.policy())
        for line, rec in records.parents:
            try:
                writer.add_record(rec, slug=rec["metadata"]["name"])
            except RowError as exc:
                problems.append(ImportProblem(name, line, exc.field, exc.reason))
        for line, bundle in records.runs:
            try:
                writer.add_run_bundle(bundle, line=line)
            except RowError as exc:
                problems.append(ImportProblem(name, line, exc.field, exc.reason))
        writer.flush()
        settle(conn, transaction, writer, report, problems, prov.slug, records.skipped, check=check)
    return report


def settle(
    conn,
    transaction,
    writer,
    report: ImportReport,
    problems: list[ImportProblem],
    source_slug: str,
    skipped: dict[str, int],
    *,
    check: bool,
) -> None:
    """End one upstream path's savepoint: refuse it whole when the writer or the caller found a
    problem, take it back when ``check``, else record the source's refresh and keep it."""
    from kernelindex.store.refresh.writes import record_refresh

    problems += [ImportProblem(report.path, p.line, p.field, p.reason) for p in writer.problems]
    if problems:
        transaction.rollback()
        raise ImportFailed(problems)
    report.absorb(writer)
    report.upstream_skipped.update(skipped)
    if check:
        transaction.rollback()
    else:
        record_refresh(conn, [source_slug], report.path, rows_added=sum(report.added.values()))
        transaction.commit()
