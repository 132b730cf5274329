"""The run listings: ``/runs``, ``GET /api/v1/runs`` and the home page's latest runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelindex.store.reads import runs
from kernelindex.store.reads.stacks import stacks_of_runs
from kernelindex.views.common import evidence_levels
from kernelindex.views.formatting import format_value

if TYPE_CHECKING:
    from sqlalchemy import Connection


RUN_FILTERS = ("operation", "workload", "comparisonKey", "status", "source", "hardware")
"""operation: id, slug, name, alias or digest prefix; workload: id, name or digest prefix; comparisonKey and
status: exact; source: slug; hardware: model substring, architecture or vendor."""


def run_list_item(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": r["id"],
        "digest": r["run_digest"],
        "status": r["status"],
        "observedAt": r["observed_at"],
        "title": r["run_title"],
        "workloadId": r["workload_id"],
        "comparisonKey": r["comparison_key"],
        "source": r["source_slug"],
        "hardware": r["hardware_model"],
        "operation": r.get("operation"),
        "primary": {
            "metric": r["primary_metric"],
            "statistic": r["primary_statistic"],
            "unit": r["primary_unit"],
            "value": r["primary_value"],
            "display": format_value(r["primary_value"], r["primary_unit"]),
        },
        "links": {"self": f"/runs/{r['id']}", "json": f"/api/v1/runs/{r['id']}"},
    }


def list_runs(conn: Connection, after: int | None, limit: int, filters: dict[str, str]) -> tuple[list, int | None]:
    """Runs in arrival order matching ``filters`` (:data:`RUN_FILTERS`, read as :class:`runs.RunFilter` reads them)."""
    names = {
        "operation": "operation",
        "workload": "workload",
        "comparisonKey": "comparison_key",
        "status": "status",
        "source": "source",
        "hardware": "hardware",
    }
    wanted = runs.RunFilter(**{names[k]: v for k, v in filters.items()}, limit=limit)
    rows, last = runs.list_runs(conn, wanted, after)
    return _with_facts(conn, [run_list_item(r) for r in rows]), last


def latest_runs(conn: Connection, n: int = 10) -> list[dict[str, Any]]:
    return _with_facts(conn, [run_list_item(r) for r in runs.latest_runs(conn, n)])


def _with_facts(conn: Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each listed run's evidence level and software stack (a listing says when it mixes stacks),
    from one bulk call each."""
    levels = evidence_levels(conn, [item["digest"] for item in items])
    stacks = stacks_of_runs(conn, [item["id"] for item in items])
    for item in items:
        item["evidence"] = levels.get(item["digest"])
        item["stack"] = stacks.get(item["id"])
    return items
