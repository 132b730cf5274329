"""The records ledger as a reader outside the site asks for it (the MCP ``list_records`` and
``list_changes`` tools): the same filters and entries as ``GET /api/v1/records``, paged by offset.
:func:`ledger_filter` is the one reading of those filters, for the tools, the page, the API and the feed."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import Field

from kernelindex.records.refusal import RefusalKind, ViewRefusal
from kernelindex.store.reads import entities
from kernelindex.store.reads.ledger import LedgerFilter, hardware_models
from kernelindex.store.reads.lookup import check_filter, resolve_operation
from kernelindex.views import ledger as ledger_view
from kernelindex.views.common import ViewModel

if TYPE_CHECKING:
    from sqlalchemy import Connection

MAX_TEXT = 300


class ChangesPage(ViewModel):
    items: list[ledger_view.LedgerEntry]
    since: str | None = Field(description="the normalised UTC floor applied (inclusive), or null")
    offset: int
    nextOffset: int | None = Field(description="the offset of the next page, or null on the last page")


def since_text(since: str | None) -> str | None:
    """``since`` as the ledger states the floor it applied: UTC, milliseconds, ``Z``."""
    return ledger_view.parse_since(since).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z" if since else None


def ledger_filter(
    conn: Connection,
    *,
    since: str | None = None,
    operation: str | None = None,
    gpu: str | None = None,
    source: str | None = None,
    kind: str | None = None,
) -> tuple[LedgerFilter, datetime | None]:
    """The ledger's filters read and checked: what the query selects, and the ``since`` instant (UTC)."""
    for name, value in (("since", since), ("operation", operation), ("gpu", gpu), ("source", source), ("kind", kind)):
        if value is not None and len(value) > MAX_TEXT:
            raise ViewRefusal(
                RefusalKind.BAD_REQUEST, "too-long", f"{name} is longer than {MAX_TEXT} characters", parameter=name
            )
    if kind and kind not in ledger_view.KINDS:
        raise ViewRefusal(
            RefusalKind.BAD_REQUEST,
            "bad-kind",
            f"kind {kind!r} is not one of {', '.join(ledger_view.KINDS)}",
            parameter="kind",
        )
    since_at = ledger_view.parse_since(since) if since else None
    for name, value in (("operation", operation), ("source", source)):
        if value:
            check_filter(conn, name, value)
    ops = (resolve_operation(conn, operation).semantic_digest,) if operation else None
    # a GPU is no stored record, only words in the runs' hardware: one that no run names matches nothing
    models = tuple(m for m in hardware_models(conn) if entities.gpu_slug(m) == entities.gpu_slug(gpu)) if gpu else None
    floor = since_at.strftime("%Y-%m-%dT%H:%M:%S") if since_at else None
    return LedgerFilter(ops, models, source or None, floor), since_at


def changes_page(
    conn: Connection,
    base_url: str,
    *,
    since: str | None = None,
    operation: str | None = None,
    gpu: str | None = None,
    source: str | None = None,
    kind: str | None = None,
    offset: int = 0,
    limit: int = 20,
) -> ChangesPage:
    """Ledger entries newest first: new runs, new leaders, corrections, retractions, correction requests."""
    wanted, since_at = ledger_filter(conn, since=since, operation=operation, gpu=gpu, source=source, kind=kind)
    rows, more = ledger_view.merged(conn, wanted, since_at, kind, offset, limit)
    return ChangesPage(
        items=ledger_view.entries(conn, rows, base_url),
        since=since_text(since),
        offset=offset,
        nextOffset=offset + limit if more else None,
    )
