"""Side by side comparison of 2 to 8 runs.

A ratio is a claim that two numbers measure the same thing, so one is given only between runs
with the same comparison key (same operation, workload, protocol, environment, correctness
policy and metric). Runs from different groups are listed with what differs and nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection

from datetime import date
from typing import Any

from kernelindex.records.canonical import metric_key
from kernelindex.store.reads.lookup import resolve_run
from kernelindex.views.errors import Refusal
from kernelindex.views.run import run_view

MIN_RUNS, MAX_RUNS = 2, 8
KEY_PARTS = ("operation", "workload", "protocol", "environment", "correctness", "metric")
LABELS = "ABCDEFGH"


def key_parts(row) -> dict[str, str | None]:
    return {
        "operation": row.operation_digest,
        "workload": row.workload_digest,
        "protocol": row.protocol_key,
        "environment": row.environment_key,
        "correctness": row.correctness_key,
        "metric": metric_key(row.primary_metric, row.primary_statistic, row.primary_unit),
    }


def check_count(n: int) -> None:
    if not MIN_RUNS <= n <= MAX_RUNS:
        raise Refusal(400, "bad-run-count", f"compare takes {MIN_RUNS} to {MAX_RUNS} runs, got {n}", parameter="run")


def _row(field: str, values: list[Any]) -> dict[str, Any]:
    shown = [None if v is None else str(v) for v in values]
    return {"field": field, "values": shown, "same": len(set(shown)) == 1}


def _fields(views: list[dict[str, Any]], parts: list[dict[str, str | None]]) -> list[dict[str, Any]]:
    def rank(v):
        r = v["rank"]
        return f"{r['rank']} of {r['groupSize']}" if r.get("rank") else "not ranked"

    ident = [v["identity"] for v in views]
    rows = [
        _row("title", [v["title"] for v in views]),
        _row("status", [v["status"] for v in views]),
        _row("evidence", [v["evidence"]["level"] for v in views]),
        _row("primary value", [v["primary"]["display"] for v in views]),
        _row("rank", [rank(v) for v in views]),
        _row("observed", [v["observedDate"] for v in views]),
        _row("implementation", [i["implementation"]["title"] or i["implementation"]["digest"] for i in ident]),
        _row("operation", [(i["operation"] or {}).get("name") for i in ident]),
        _row("workload", [i["workload"]["title"] for i in ident]),
        _row("hardware", [v["environment"]["hardware"].get("product") or v["environment"]["title"] for v in views]),
        _row("source", [i["source"]["name"] for i in ident]),
    ]
    labels: list[str] = []
    for v in views:
        for m in (v["sourceNative"] or {}).get("display", []):
            if m["label"] not in labels:
                labels.append(m["label"])
    for label in labels:
        rows.append(
            _row(
                label,
                [
                    next((m["text"] for m in (v["sourceNative"] or {}).get("display", []) if m["label"] == label), None)
                    for v in views
                ],
            )
        )
    for name in KEY_PARTS:
        rows.append(_row(f"key: {name}", [p[name] for p in parts]))
    rows.append(_row("comparison key", [i["comparisonKey"] for i in ident]))
    return rows


def _groups(rows, views) -> list[dict[str, Any]]:
    """Runs by comparison key; inside a group of two or more, each value over the group's best."""
    by_key: dict[str | None, list[int]] = {}
    for i, row in enumerate(rows):
        by_key.setdefault(row.comparison_key, []).append(i)
    out = []
    for key, members in by_key.items():
        ratios = []
        values = [(i, rows[i].primary_value) for i in members if rows[i].primary_value]
        if key is not None and len(values) >= 2:
            lower = views[members[0]]["primary"]["direction"].startswith("lower")
            best = min(v for _, v in values) if lower else max(v for _, v in values)
            for i, v in values:
                ratios.append(
                    {
                        "runId": rows[i].id,
                        "label": LABELS[i],
                        "ratio": v / best,
                        "text": f"{v / best:.3f}× the best of this group",
                    }
                )
        out.append({"comparisonKey": key, "runIds": [rows[i].id for i in members], "ratios": ratios})
    return out


def _markdown(views: list[dict[str, Any]], fields: list[dict[str, Any]], statement: str | None) -> str:
    def cell(text: Any) -> str:
        return ("—" if text is None else str(text)).replace("|", "\\|").replace("\n", " ")

    head = "| field | " + " | ".join(f"{LABELS[i]}" for i in range(len(views))) + " |"
    lines = [head, "|---" * (len(views) + 1) + "|"]
    for f in fields:
        lines.append(
            f"| {cell(f['field'])}{'' if f['same'] else ' (differs)'} | "
            + " | ".join(cell(v) for v in f["values"])
            + " |"
        )
    lines.append("")
    for i, v in enumerate(views):
        lines.append(f"{LABELS[i]}: {v['citation']['permalink']}")
    if statement:
        lines += ["", statement]
    return "\n".join(lines) + "\n"


def compare_runs(conn: Connection, rows: list, base_url: str, today: date) -> dict[str, Any]:
    check_count(len(rows))
    views = [run_view(conn, row, base_url, today) for row in rows]
    parts = [key_parts(row) for row in rows]
    differs = [name for name in KEY_PARTS if len({p[name] for p in parts}) > 1]
    keys = {row.comparison_key for row in rows}
    comparable = len(keys) == 1 and None not in keys
    groups = _groups(rows, views)
    ratio = statement = None
    if comparable and len(rows) == 2 and rows[0].primary_value and rows[1].primary_value:
        ratio = rows[0].primary_value / rows[1].primary_value
        lower = views[0]["primary"]["direction"].startswith("lower")
        if ratio == 1:
            statement = "A and B have the same value"
        else:
            a_better = ratio < 1 if lower else ratio > 1
            factor = max(ratio, 1 / ratio)
            statement = (
                f"{'A' if a_better else 'B'} is {factor:.3f}× better than {'B' if a_better else 'A'} "
                f"({views[0]['primary']['direction']})"
            )
    fields = _fields(views, parts)
    query = "&".join(f"run={row.id}" for row in rows)
    return {
        "runs": [
            {
                "label": LABELS[i],
                "id": v["id"],
                "digest": v["digest"],
                "title": v["title"],
                "status": v["status"],
                "evidence": v["evidence"],
                "primary": v["primary"],
                "rank": v["rank"],
                "observedDate": v["observedDate"],
                "comparisonKey": v["identity"]["comparisonKey"],
                "permalink": v["citation"]["permalink"],
                "links": v["links"],
            }
            for i, v in enumerate(views)
        ],
        "comparable": comparable,
        "fields": fields,
        "differingParts": differs,
        "groups": groups,
        "ratio": ratio,
        "ratioDefinition": "value(A) / value(B), given only when both runs share one comparison key",
        "statement": statement,
        "markdown": _markdown(views, fields, statement),
        "links": {"self": f"/compare?{query}", "json": f"/api/v1/compare?{query}", "markdown": f"/compare.md?{query}"},
    }


def compare_view(conn: Connection, idents: list[str], base_url: str, today: date) -> dict[str, Any]:
    """The runs ``idents`` names (id, digest or 8+ hex prefix), compared: what ``/compare``, its JSON and
    Markdown twins, ``kernelindex compare`` and the MCP ``compare_runs`` tool show."""
    check_count(len(idents))
    return compare_runs(conn, [resolve_run(conn, ident) for ident in idents], base_url, today)
