"""What the run page shows beyond the record itself: measured correctness (per case for a suite),
per-tensor workload rows, the comparison profile, lifecycle notes and the source's terms."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection

from datetime import date
from typing import Any

from kernelindex.store.reads.run_extras import case_runs_of_suite
from kernelindex.store.reads.runs import RunRecords, records_of
from kernelindex.web.formatting import format_value, safe_url

STALE_DAYS = 365


def _measured(correctness: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(correctness, dict) or not correctness:
        return None
    return {
        "comparator": correctness.get("comparator"),
        "maxAbsoluteError": correctness.get("maximumAbsoluteError"),
        "maxRelativeError": correctness.get("maximumRelativeError"),
        "matchedRatio": correctness.get("matchedRatio"),
    }


def _tensors(wl_spec: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [
        {
            "name": name,
            "kind": "tensor",
            "dtype": t.get("dtype"),
            "shape": t.get("shape"),
            "strides": t.get("strides"),
            "alignmentBytes": t.get("alignmentBytes"),
        }
        for name, t in sorted((wl_spec.get("tensors") or {}).items())
        if isinstance(t, dict)
    ]
    rows += [
        {"name": name, "kind": "scalar", "dtype": s.get("dtype"), "shape": [], "strides": None, "value": s.get("value")}
        for name, s in sorted((wl_spec.get("scalars") or {}).items())
        if isinstance(s, dict)
    ]
    return rows


def _age_days(observed: str | None, today: date) -> int | None:
    try:
        return (today - date.fromisoformat((observed or "")[:10])).days
    except ValueError:
        return None


def run_extras(
    conn: Connection, row, view: dict[str, Any], today: date, records: RunRecords | None = None
) -> dict[str, Any]:
    """The extras of ``view`` (``records``: the run's :func:`records_of`, when read already)."""
    records = records or records_of(conn, row)
    spec = ((row.manifest or {}).get("run") or {}).get("spec") or {}
    measured = _measured(spec.get("correctness"))
    cases = []
    wl = records.workload
    if wl is not None and wl.kind == "WorkloadSuite" and wl.operation_id:
        seen = set()
        for case in case_runs_of_suite(conn, row, wl.operation_id):
            if case.workload_id in seen:
                continue
            seen.add(case.workload_id)
            cases.append(
                {
                    "runId": case.id,
                    "workloadId": case.workload_id,
                    "case": case.name or case.shape_summary,
                    "status": case.status,
                    "display": format_value(case.primary_value, case.primary_unit),
                    "measured": _measured(case.correctness),
                }
            )
    wl_spec = ((wl.manifest if wl is not None else None) or {}).get("spec") or {}
    open_requests = [c for c in view["evidenceDetail"]["corrections"] if c["status"] == "open"]
    newest = max([view["observedAt"] or ""] + [r["observedAt"] or "" for r in view["replications"]])
    age = _age_days(newest, today)
    lifecycle = []
    if age is not None and age > STALE_DAYS:
        lifecycle.append(
            {
                "kind": "stale",
                "text": f"stale: not re-observed for {age} days "
                f"(more than {STALE_DAYS}); the software may have moved on",
            }
        )
    if open_requests:
        lifecycle.append(
            {
                "kind": "disputed",
                "text": f"disputed: {len(open_requests)} open correction "
                f"request{'' if len(open_requests) == 1 else 's'}",
            }
        )
    ident = view["identity"]
    source = records.source
    policy = (source.policy if source is not None else None) or {}
    return {
        "measuredCorrectness": {"run": measured, "cases": cases} if measured or cases else None,
        "tensors": _tensors(wl_spec),
        "comparisonProfile": [
            {"part": "operation", "label": (ident["operation"] or {}).get("name"), "digest": row.operation_digest},
            {"part": "workload", "label": ident["workload"]["title"], "digest": row.workload_digest},
            {"part": "protocol", "label": view["protocol"]["title"], "digest": row.protocol_key},
            {"part": "environment", "label": view["environment"]["title"], "digest": row.environment_key},
            {"part": "correctness", "label": None, "digest": row.correctness_key},
            {"part": "metric", "label": view["primary"]["direction"], "digest": view["primary"]["key"]},
        ],
        "lifecycle": lifecycle,
        "sourceTerms": {
            "name": ident["source"]["name"],  # the source's name, else the slug the run names
            "url": policy.get("url"),
            "href": safe_url(policy.get("url")),
            "licence": policy.get("license"),
            "attribution": policy.get("attribution"),
        }
        if source is not None or ident["source"]["slug"]
        else None,
    }


def full_run_view(conn: Connection, row, base_url: str, today: date) -> dict[str, Any]:
    """A run as its page, ``GET /api/v1/runs/{id}`` and ``kernelindex show --json`` give it: the
    run view with these extras, from this one function."""
    from kernelindex.web.views import run_view

    records = records_of(conn, row)  # read once for both
    view = run_view(conn, row, base_url, today, records)
    view.update(run_extras(conn, row, view, today, records))
    return view
