"""The run listings: ``/runs``, ``GET /api/v1/runs``, ``kernelindex runs``, the MCP ``runs`` tool and the
home page's latest runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from kernelindex.records.refusal import BadParameter
from kernelindex.records.vocabulary import RunStatus
from kernelindex.store.reads import runs
from kernelindex.store.reads.lookup import check_filter
from kernelindex.store.reads.stacks import stacks_of_runs
from kernelindex.views.common import EvidenceLevel, ItemLinks, NextLink, ViewModel, evidence_levels
from kernelindex.views.formatting import format_value

if TYPE_CHECKING:
    from sqlalchemy import Connection


RUN_FILTERS = ("operation", "workload", "comparisonKey", "status", "source", "hardware")
"""operation: id, slug, name, alias or digest prefix; workload: id, name or digest prefix; comparisonKey and
status: exact; source: slug; hardware: model substring, architecture or vendor."""
STATUSES = tuple(RunStatus)  # an unknown status= is refused: it would match nothing, silently


class ListedPrimary(ViewModel):
    metric: str | None
    statistic: str | None
    unit: str | None
    value: float | None
    display: str = Field(description="the value in a readable unit, e.g. 317.9 µs")


class RunItem(ViewModel):
    id: str
    digest: str
    status: str
    observedAt: str | None
    title: str | None
    workloadId: str | None
    comparisonKey: str | None
    source: str | None
    hardware: str | None
    operation: str | None = Field(description="the operation's slug")
    primary: ListedPrimary
    links: ItemLinks
    evidence: EvidenceLevel | None
    stack: str | None = Field(description="its environment's software stack, as one short label")


class RunListing(ViewModel):
    items: list[RunItem]
    total: int = Field(description="how many runs match the filters, on every page together")
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: NextLink


def _items(conn: Connection, rows: list[dict[str, Any]]) -> list[RunItem]:
    """Each listed run with its evidence level and software stack (a listing says when it mixes stacks),
    from one bulk call each."""
    levels = evidence_levels(conn, [r["run_digest"] for r in rows])
    stacks = stacks_of_runs(conn, [r["id"] for r in rows])
    items = []
    for r in rows:
        level = levels.get(r["run_digest"])
        items.append(
            RunItem(
                id=r["id"],
                digest=r["run_digest"],
                status=r["status"],
                observedAt=r["observed_at"],
                title=r["run_title"],
                workloadId=r["workload_id"],
                comparisonKey=r["comparison_key"],
                source=r["source_slug"],
                hardware=r["hardware_model"],
                operation=r.get("operation"),
                primary=ListedPrimary(
                    metric=r["primary_metric"],
                    statistic=r["primary_statistic"],
                    unit=r["primary_unit"],
                    value=r["primary_value"],
                    display=format_value(r["primary_value"], r["primary_unit"]),
                ),
                links=ItemLinks(self=f"/runs/{r['id']}", json_=f"/api/v1/runs/{r['id']}"),
                evidence=EvidenceLevel(**level) if level else None,
                stack=stacks.get(r["id"]),
            )
        )
    return items


_FILTER_FIELDS = {
    "operation": "operation",
    "workload": "workload",
    "comparisonKey": "comparison_key",
    "status": "status",
    "source": "source",
    "hardware": "hardware",
}


_NAMED_FILTERS = ("operation", "workload", "source")  # each names a stored record: one naming none is a 404


def _wanted(conn: Connection, filters: dict[str, str], limit: int | None) -> runs.RunFilter:
    """``filters`` checked (a status we know, records that exist) and read as :class:`runs.RunFilter` reads them."""
    status = filters.get("status")
    if status is not None and status not in STATUSES:
        raise BadParameter("bad-parameter", f"status: one of {', '.join(STATUSES)}, got {status!r}", parameter="status")
    for name in _NAMED_FILTERS:
        if filters.get(name):
            check_filter(conn, name, filters[name])
    return runs.RunFilter(**{_FILTER_FIELDS[k]: v for k, v in filters.items()}, limit=limit)


def list_runs(
    conn: Connection, after: int | None, limit: int, filters: dict[str, str]
) -> tuple[list[RunItem], int | None]:
    """Runs in arrival order matching ``filters`` (:data:`RUN_FILTERS`, read as :class:`runs.RunFilter` reads them)."""
    rows, last = runs.list_runs(conn, _wanted(conn, filters, limit), after)
    return _items(conn, rows), last


def count_runs(conn: Connection, filters: dict[str, str]) -> int:
    """How many runs match ``filters`` in all: a shortened listing says what part of them it shows."""
    return runs.count_runs(conn, _wanted(conn, filters, None))


def run_page(
    conn: Connection, after: int | None, limit: int, filters: dict[str, str]
) -> tuple[list[RunItem], int | None, int]:
    """One page of the listing (``GET /api/v1/runs``, the MCP tool), where it ended, and the total that
    every page carries, so a client that reads one page can say "N of M"."""
    wanted = _wanted(conn, filters, limit)
    rows, last = runs.list_runs(conn, wanted, after)
    return _items(conn, rows), last, runs.count_runs(conn, wanted)


def latest_runs(conn: Connection, n: int = 10) -> list[RunItem]:
    return _items(conn, runs.latest_runs(conn, n))
