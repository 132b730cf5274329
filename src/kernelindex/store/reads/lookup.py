"""Finding one record from what a person types or pastes: the one resolver every reader uses.

A run, workload, operation or implementation is named by its id, its full digest, a digest prefix
of 8 or more hex characters (with or without ``sha256:``) that names exactly one record, or, where
the record has them, a slug, an alias or a name. Anything else is refused with one
:class:`LookupFailed` whose ``kind`` says why: ``not_found``, ``ambiguous`` (with the number of
candidates) or ``bad_request`` (a hex prefix too short to be safe). The web maps the kinds to
404 / 409 / 400 and the CLI prints the message; both say the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from sqlalchemy import Connection, Row, Select, Table, bindparam, func, or_, select
from sqlalchemy.sql import ColumnElement

from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.store import tables as t
from kernelindex.store.serving import tables as st

MIN_PREFIX = 8
HEX_PREFIX = re.compile(r"^(sha256:)?([0-9a-f]{8,64})$")
SHORT_HEX = re.compile(r"^(sha256:)?[0-9a-f]{1,7}$")
FULL_DIGEST = re.compile(r"^(sha256:)?([0-9a-f]{64})$")
SLUG_WITH_DIGEST = re.compile(r"^(?P<slug>.+)-(?P<hex>[0-9a-fA-F]{8,64})$")
CANDIDATES_COUNTED = 1000  # an ambiguous prefix is counted up to here; the message needs no more


class LookupFailed(Refusal, LookupError):
    """``text`` names no single ``what`` (run, workload, operation, implementation, ranking target)."""

    def __init__(
        self,
        kind: RefusalKind,
        what: str,
        text: str,
        message: str,
        *,
        candidates: int | None = None,
        spelled: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.what = what
        self.text = text
        self._message = message
        self.candidates = candidates  # how many records an ambiguous text matches
        self.spelled = spelled  # what an ambiguous text was read as: "digest prefix", "name", "slug", "alias"

    @property
    def message(self) -> str:
        return self._message


@dataclass(frozen=True)
class _Kind:
    """How one kind of record is named: its table, digest column and any name-like columns."""

    what: str
    table: Table
    digest: str
    names: tuple[str, ...] = ()
    named_by: str = "id or digest"


RUN = _Kind("run", t.runs, "run_digest")
WORKLOAD = _Kind("workload", t.workloads, "workload_digest", ("name",), "id, digest or name")
OPERATION = _Kind("operation", t.operations, "semantic_digest", ("slug", "name"), "id, digest, slug, name or alias")
IMPLEMENTATION = _Kind("implementation", t.implementations, "implementation_digest", ("slug",), "id, digest or slug")
MODEL = _Kind("model", st.model_revisions, "model_digest", ("slug", "name"), "id, digest, slug or name")
SERVING_RUN = _Kind("serving run", st.serving_runs, "run_digest")


@cache
def row_by(table: Table, column: str) -> Select:
    """``SELECT * FROM table WHERE column = :value``, built once per (table, column): building a
    statement costs several times what running it does, and a page makes dozens of them."""
    return select(table).where(table.c[column] == bindparam("value"))


def _one(conn: Connection, kind: _Kind, where: ColumnElement, text: str, spelled: str) -> Row | None:
    """The single row ``where`` selects; None when there is none; ambiguous when there are several."""
    rows = conn.execute(select(kind.table).where(where).order_by(kind.table.c.seq).limit(2)).all()
    if len(rows) < 2:
        return rows[0] if rows else None
    count = (
        conn.scalar(
            select(func.count()).select_from(select(kind.table.c.seq).where(where).limit(CANDIDATES_COUNTED).subquery())
        )
        or 0
    )
    raise LookupFailed(
        RefusalKind.AMBIGUOUS,
        kind.what,
        text,
        f"{spelled} {text!r} matches {count} {kind.what}s; give more characters or a digest",
        candidates=count,
        spelled=spelled,
    )


def _resolve(conn: Connection, kind: _Kind, ident: str, extra: ColumnElement | None = None) -> Row:
    text = ident.strip()
    lowered = text.lower()
    table = kind.table
    if not text:
        raise LookupFailed(RefusalKind.BAD_REQUEST, kind.what, text, f"an empty string names no {kind.what}")
    if full := FULL_DIGEST.match(lowered):  # the common case: one lookup on a unique column
        row = conn.execute(row_by(table, kind.digest), {"value": "sha256:" + full.group(2)}).first()
        if row is not None:
            return row
    row = conn.execute(row_by(table, "id"), {"value": text}).first()
    if row is not None:
        return row
    for column in kind.names:
        if (row := _one(conn, kind, table.c[column] == text, text, column)) is not None:
            return row
    if extra is not None and (row := _one(conn, kind, extra, text, "alias")) is not None:
        return row
    if (match := HEX_PREFIX.match(lowered)) and not full:
        where = table.c[kind.digest].like(f"sha256:{match.group(2)}%")
        if (row := _one(conn, kind, where, text, "digest prefix")) is not None:
            return row
    if SHORT_HEX.match(lowered):
        raise LookupFailed(
            RefusalKind.BAD_REQUEST,
            kind.what,
            text,
            f"{text!r} is too short to name {_article(kind.what)} {kind.what}: give its id, its digest, or at least "
            f"{MIN_PREFIX} hex characters of its digest",
        )
    raise nothing_named(kind.what, kind.named_by, text)


def _article(noun: str) -> str:
    """The article a message puts before ``noun``: "an operation", "a run" (each kind named here
    starts with the letter it sounds)."""
    return "an" if noun[:1].lower() in "aeiou" else "a"


def nothing_named(what: str, named_by: str, text: str) -> LookupFailed:
    """The one refusal of a text that names no record of its kind, whether it came as a path's id or a
    listing's filter: 404, naming the kind and the text."""
    return LookupFailed(RefusalKind.NOT_FOUND, what, text, f"no {what} with {named_by} {text!r}")


def naming_clause(kind: _Kind, text: str, extra: ColumnElement | None = None) -> ColumnElement[bool]:
    """SQL: the record is one that ``text`` could name (for filters, which keep every match)."""
    table, lowered = kind.table, text.strip().lower()
    conds = [table.c.id == text.strip(), *(table.c[column] == text.strip() for column in kind.names)]
    if match := HEX_PREFIX.match(lowered):
        conds.append(table.c[kind.digest].like(f"sha256:{match.group(2)}%"))
    if extra is not None:
        conds.append(extra)
    return or_(*conds)


def _alias_of(text: str) -> ColumnElement[bool]:
    return t.operations.c.id.in_(
        select(t.operation_aliases.c.operation_id).where(t.operation_aliases.c.alias == text.strip())
    )


def operation_clause(text: str) -> ColumnElement[bool]:
    """SQL: the operation is one ``text`` could name (id, digest or prefix, slug, name, alias)."""
    return naming_clause(OPERATION, text, _alias_of(text))


def workload_clause(text: str) -> ColumnElement[bool]:
    """SQL: the workload is one ``text`` could name (id, digest or prefix, name)."""
    return naming_clause(WORKLOAD, text)


def resolve_run(conn: Connection, ident: str) -> Row:
    """The run named by its id, its digest or a unique digest prefix of 8+ hex characters."""
    return _resolve(conn, RUN, ident)


def resolve_workload(conn: Connection, ident: str) -> Row:
    """The workload named by its id, digest, unique digest prefix or (unique) name."""
    return _resolve(conn, WORKLOAD, ident)


def resolve_operation(conn: Connection, ident: str) -> Row:
    """The operation named by its id, semantic digest (or unique prefix), slug, name or alias."""
    return _resolve(conn, OPERATION, ident, _alias_of(ident))


def resolve_implementation(conn: Connection, ident: str) -> Row:
    """The implementation named by its id, digest (or unique prefix), slug, or public slug
    (``<slug>-<8+ hex of its digest>``, what links carry when a slug is shared)."""
    try:
        return _resolve(conn, IMPLEMENTATION, ident)
    except LookupFailed as exc:
        suffixed = SLUG_WITH_DIGEST.match(ident.strip())
        if exc.kind is not RefusalKind.NOT_FOUND or suffixed is None:
            raise
        table = t.implementations
        where = (table.c.slug == suffixed["slug"]) & table.c.implementation_digest.like(
            f"sha256:{suffixed['hex'].lower()}%"
        )
        row = _one(conn, IMPLEMENTATION, where, ident.strip(), "slug")
        if row is None:
            raise
        return row


def contains_pattern(text: str) -> str:
    """A LIKE pattern (escape character backslash) matching ``text`` anywhere, case-folded, its
    wildcard characters taken literally."""
    return "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def resolve_model(conn: Connection, ident: str) -> Row:
    """The model named by its id, digest (or unique prefix), slug or name, else by the one model whose
    slug or name contains ``ident`` (case-insensitive): "llama2-70b" finds "mlperf-llama2-70b"."""
    try:
        return _resolve(conn, MODEL, ident)
    except LookupFailed as exc:
        if exc.kind is not RefusalKind.NOT_FOUND:
            raise
    row = _one(conn, MODEL, _model_containing(ident), ident.strip(), "part of a name")
    if row is None:
        raise nothing_named(MODEL.what, MODEL.named_by, ident.strip())
    return row


def _model_containing(text: str) -> ColumnElement[bool]:
    """SQL: the model's slug or name contains ``text``, case-folded (how a model is named past its slug)."""
    pattern = contains_pattern(text.strip())
    table = st.model_revisions
    return or_(func.lower(table.c.slug).like(pattern, escape="\\"), func.lower(table.c.name).like(pattern, escape="\\"))


def resolve_serving_run(conn: Connection, ident: str) -> Row:
    """The serving run named by its id, its digest or a unique digest prefix of 8+ hex characters."""
    return _resolve(conn, SERVING_RUN, ident)


# A listing filter whose value names a stored record, by kind: how it is named, and the rows that
# hold such a record (a source is also named by the runs that state it before its own row arrives).
_FILTER_TARGETS: dict[str, tuple[str, Callable[[str], tuple[Select, ...]]]] = {
    "operation": (OPERATION.named_by, lambda v: (select(t.operations.c.id).where(operation_clause(v)),)),
    "workload": (WORKLOAD.named_by, lambda v: (select(t.workloads.c.id).where(workload_clause(v)),)),
    "source": (
        "slug",
        lambda v: (
            select(t.sources.c.id).where(t.sources.c.slug == v),
            select(t.runs.c.id).where(t.runs.c.source_slug == v),
        ),
    ),
    "project": ("slug", lambda v: (select(t.projects.c.id).where(t.projects.c.slug == v),)),
    "model": (
        MODEL.named_by,
        lambda v: (select(st.model_revisions.c.id).where(naming_clause(MODEL, v) | _model_containing(v)),),
    ),
    "serving configuration": (
        "id",
        lambda v: (select(st.serving_configurations.c.id).where(st.serving_configurations.c.id == v),),
    ),
}


def check_filter(conn: Connection, what: str, value: str) -> None:
    """Refuse (404, :func:`nothing_named`) a listing filter naming no stored ``what``: every listing
    answers an unknown operation, workload, source, project, model or configuration alike, where an
    empty page would read as "nothing measured yet". A free-form filter (a GPU, a status) matching
    nothing is just an empty page, and is not checked here."""
    named_by, holders = _FILTER_TARGETS[what]
    if not any(conn.execute(query.limit(1)).first() for query in holders(value)):
        raise nothing_named(what, named_by, value.strip())


@dataclass(frozen=True)
class RankTarget:
    """What ``kernelindex rank`` was asked about: one comparison group, or every group of some workloads."""

    comparison_key: str | None = None
    workload_ids: tuple[str, ...] = ()


def resolve_rank_target(conn: Connection, ident: str) -> RankTarget:
    """A comparison key, else a workload, else an operation (all its workloads), else a run (its group),
    else a unique comparison key prefix of 8+ hex characters.

    So ``kernelindex rank`` accepts whatever ``kernelindex runs``, ``show`` and ``search`` print.
    """
    text = ident.strip()
    if full := FULL_DIGEST.match(text.lower()):
        key = "sha256:" + full.group(2)
        if conn.scalar(select(t.runs.c.id).where(t.runs.c.comparison_key == key).limit(1)) is not None:
            return RankTarget(comparison_key=key)
    refusals: list[LookupFailed] = []
    for find in (resolve_workload, resolve_operation, resolve_run):
        try:
            row = find(conn, text)
        except LookupFailed as exc:
            if exc.kind is RefusalKind.AMBIGUOUS:
                raise
            refusals.append(exc)
            continue
        if find is resolve_workload:
            return RankTarget(workload_ids=(row.id,))
        if find is resolve_operation:
            ids = conn.scalars(
                select(t.workloads.c.id).where(t.workloads.c.operation_id == row.id).order_by(t.workloads.c.seq)
            ).all()
            return RankTarget(workload_ids=tuple(ids))
        if row.comparison_key is None:
            raise LookupFailed(
                RefusalKind.NOT_FOUND,
                "comparison group",
                text,
                f"run {text!r} has no comparison group yet (its workload is not stored)",
            )
        return RankTarget(comparison_key=row.comparison_key)
    if (prefix := HEX_PREFIX.match(text.lower())) and not FULL_DIGEST.match(text.lower()):
        # a comparison key prefix, as `kernelindex search` and the pages print group keys
        keys = conn.scalars(
            select(t.runs.c.comparison_key)
            .where(t.runs.c.comparison_key.like(f"sha256:{prefix.group(2)}%"))
            .distinct()
            .limit(2)
        ).all()
        if len(keys) > 1:
            raise LookupFailed(
                RefusalKind.AMBIGUOUS,
                "comparison group",
                text,
                f"comparison key prefix {text!r} matches several groups; give more characters or the whole key",
            )
        if keys:
            return RankTarget(comparison_key=keys[0])
    kind = (
        RefusalKind.BAD_REQUEST if all(r.kind is RefusalKind.BAD_REQUEST for r in refusals) else RefusalKind.NOT_FOUND
    )
    message = (
        refusals[0].message
        if kind is RefusalKind.BAD_REQUEST
        else (f"no comparison key, workload, operation or run named {text!r}")
    )
    raise LookupFailed(kind, "ranking target", text, message)
