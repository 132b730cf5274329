"""The records ledger as a view model, and the ``since`` time rule (the web draws its Atom feed).

``since`` is an ISO 8601 instant with a time zone (``2026-03-01T12:00:00Z``,
``2026-03-01T13:00:00+01:00``) or a calendar date (``2026-03-01``, meaning its midnight UTC).
A time without a zone is refused: it would mean a different instant on every server. An entry is
listed when its time is at or after ``since`` (inclusive), so a client that polls with the newest
``at`` it has seen gets that entry again and drops it by ``id``, and loses nothing that shares
the same instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from kernelindex.records.refusal import BadParameter
from kernelindex.store.reads import entities, ledger
from kernelindex.store.reads.ledger import LedgerFilter, LedgerRow
from kernelindex.views.common import Document, ViewModel
from kernelindex.views.formatting import format_value, short_digest

DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
KIND_TITLES = {
    "new_run": "New run",
    "new_leader": "New leader",
    "correction": "Correction (superseding run)",
    "retraction": "Retraction",
    "correction_request": "Correction requested",
}
KINDS = tuple(KIND_TITLES)


def parse_since(text: str) -> datetime:
    """``since`` as an aware UTC datetime, or a 400 problem saying what is accepted."""
    value = text.strip()
    try:
        if DATE_ONLY.match(value):
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or len(value) > 40:
        raise BadParameter(
            "bad-since",
            f"since {value[:40]!r} is not an ISO 8601 date or date-time (e.g. 2026-03-01 or 2026-03-01T12:00:00Z)",
            parameter="since",
        )
    if parsed.tzinfo is None:
        raise BadParameter(
            "bad-since",
            f"since {value!r} has no time zone: add Z (UTC) or an offset like +01:00",
            parameter="since",
        )
    return parsed.astimezone(UTC)


def _instant(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def merged(
    conn: Connection, f: LedgerFilter, since: datetime | None, kind: str | None, offset: int, limit: int
) -> tuple[list[LedgerRow], bool]:
    """Rows ``offset .. offset+limit`` of the merged ledger, newest first, and whether more follow."""
    depth = offset + limit + 1
    rows = ledger.ledger_rows(conn, f, depth)
    floor = datetime.min.replace(tzinfo=UTC)
    keyed = []
    for row in rows:
        at = _instant(row.at)
        if at is None or (since is not None and at < since) or (kind and row.kind != kind):
            continue
        keyed.append((at, row.entry_id, row))
    keyed.sort(key=lambda t: (t[0] or floor, t[1]), reverse=True)
    window = keyed[offset : offset + limit + 1]
    return [r for _, _, r in window[:limit]], len(window) > limit


class LedgerRun(ViewModel):
    id: str
    digest: str | None
    permalink: str | None = Field(description="a URL that names the run by digest, forever")


class LedgerOperation(ViewModel):
    slug: str
    name: str | None


class LedgerLinks(ViewModel):
    run: str | None
    json_: str | None = Field(alias="json")
    previousRun: str | None
    group: str | None


class LedgerEntry(ViewModel):
    id: str = Field(description="stable: the same change always has the same id (use it to drop repeats)")
    kind: str = Field(description="new_run, new_leader, correction, retraction or correction_request")
    kindTitle: str
    at: str = Field(description="UTC ISO 8601 time of the change")
    title: str
    summary: str
    operation: LedgerOperation | None
    run: LedgerRun | None
    detail: Document = Field(description="the change's own facts, by kind")
    links: LedgerLinks


class PageLinks(ViewModel):
    next: str | None
    feed: str
    page: str


class LedgerPage(ViewModel):
    items: list[LedgerEntry]
    since: str | None = Field(description="the normalised UTC floor applied (inclusive), or null")
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: PageLinks


def entry_view(row: LedgerRow, label: Any, base_url: str) -> LedgerEntry:
    d = row.detail
    title = (label.run_title or label.impl_title) if label is not None else None
    title = title or short_digest(row.run_digest) if row.run_digest else (title or "a run")
    op = LedgerOperation(slug=label.op_slug, name=label.op_name) if label is not None and label.op_slug else None
    if row.kind == "new_run":
        summary = (
            f"{format_value(d.get('value'), d.get('unit'))} on {d.get('hardware') or 'unknown hardware'}, "
            f"{d.get('status')}, from {d.get('source') or 'an unknown source'}"
        )
    elif row.kind == "correction":
        summary = f"supersedes an earlier run; now {format_value(d.get('value'), d.get('unit'))}"
    elif row.kind == "new_leader":
        replacing = " (replacing the previous leader)" if d.get("previousRunId") else ""
        summary = ("leads its comparison group" + replacing) if row.run_id else "no run leads its group any more"
    elif row.kind == "retraction":
        summary = f"retracted: {d.get('reason') or 'no reason given'}"
    else:
        details = d.get("details") or ""
        details = details if len(details) <= 200 else details[:200] + "…"
        summary = f"{d.get('problem')}: {d.get('requestedAction')} requested ({d.get('status')}): {details}"
    permalink = f"{base_url}/r/{row.run_digest}" if row.run_digest else None
    return LedgerEntry(
        id=row.entry_id,
        kind=row.kind,
        kindTitle=KIND_TITLES[row.kind],
        at=row.at,
        title=title,
        summary=summary,
        operation=op,
        run=LedgerRun(id=row.run_id, digest=row.run_digest, permalink=permalink) if row.run_id else None,
        detail=d,
        links=LedgerLinks(
            run=f"/runs/{row.run_id}" if row.run_id else None,
            json_=f"/api/v1/runs/{row.run_id}" if row.run_id else None,
            previousRun=f"/runs/{d['previousRunId']}" if d.get("previousRunId") else None,
            group=f"/rankings/{d['comparisonKey']}" if d.get("comparisonKey") else None,
        ),
    )


def entries(conn: Connection, rows: list[LedgerRow], base_url: str) -> list[LedgerEntry]:
    labels = entities.run_labels(conn, [r.run_id for r in rows if r.run_id])
    return [entry_view(r, labels.get(r.run_id) if r.run_id else None, base_url) for r in rows]
