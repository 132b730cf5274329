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

from pydantic import Field

from kernelindex.records.canonical import metric_key
from kernelindex.records.refusal import BadParameter
from kernelindex.store.reads.lookup import resolve_run
from kernelindex.views.common import EvidenceLevel, Interval, NativeFigure, ViewModel
from kernelindex.views.run import GroupRank, PendingRank, Primary, Run, RunLinks, run_view

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
        raise BadParameter("bad-run-count", f"compare takes {MIN_RUNS} to {MAX_RUNS} runs, got {n}", parameter="run")


class ComparedRank(ViewModel):
    """A run's place in its group, in the order the compare answer has always listed it."""

    rank: int | None
    tied: bool
    groupSize: int
    comparisonKey: str
    groupUrl: str | None
    direction: str
    tieRule: str
    interval: Interval | None
    excluded: list[str]
    excludedText: list[str]
    leaderRunId: str | None


class ComparedRun(ViewModel):
    label: str = Field(description="A, B, C ... in the order the runs were given")
    id: str
    digest: str
    title: str
    status: str
    evidence: EvidenceLevel
    primary: Primary
    rank: ComparedRank | PendingRank
    observedDate: str
    comparisonKey: str | None
    permalink: str
    links: RunLinks


class CompareField(ViewModel):
    field: str
    values: list[str | None]
    same: bool


class GroupRatio(ViewModel):
    runId: str
    label: str
    ratio: float
    text: str


class CompareGroup(ViewModel):
    comparisonKey: str | None
    runIds: list[str]
    ratios: list[GroupRatio] = Field(description="value(run) / value(best run of this group), same unit only")


class CompareLinks(ViewModel):
    self: str
    json_: str = Field(alias="json")
    markdown: str


class Compare(ViewModel):
    runs: list[ComparedRun]
    comparable: bool = Field(description="true only when every run has the same comparison key")
    fields: list[CompareField]
    differingParts: list[str]
    groups: list[CompareGroup]
    ratio: float | None = Field(description="value(A) / value(B) for two comparable runs, else null")
    ratioDefinition: str
    statement: str | None
    markdown: str
    links: CompareLinks


def _row(field: str, values: list[Any]) -> CompareField:
    shown = [None if v is None else str(v) for v in values]
    return CompareField(field=field, values=shown, same=len(set(shown)) == 1)


def _rank_text(v: Run) -> str:
    return f"{v.rank.rank} of {v.rank.groupSize}" if v.rank.rank else "not ranked"


def _figures(v: Run) -> list[NativeFigure]:
    return v.sourceNative.display if v.sourceNative else []


def _fields(views: list[Run], parts: list[dict[str, str | None]]) -> list[CompareField]:
    ident = [v.identity for v in views]
    rows = [
        _row("title", [v.title for v in views]),
        _row("status", [v.status for v in views]),
        _row("evidence", [v.evidence.level for v in views]),
        _row("primary value", [v.primary.display for v in views]),
        _row("rank", [_rank_text(v) for v in views]),
        _row("observed", [v.observedDate for v in views]),
        _row("implementation", [i.implementation.title or i.implementation.digest for i in ident]),
        _row("operation", [i.operation.name if i.operation else None for i in ident]),
        _row("workload", [i.workload.title for i in ident]),
        _row("hardware", [v.environment.hardware.get("product") or v.environment.title for v in views]),
        _row("source", [i.source.name for i in ident]),
    ]
    labels: list[str] = []
    for v in views:
        for m in _figures(v):
            if m.label not in labels:
                labels.append(m.label)
    for label in labels:
        rows.append(_row(label, [next((m.text for m in _figures(v) if m.label == label), None) for v in views]))
    for name in KEY_PARTS:
        rows.append(_row(f"key: {name}", [p[name] for p in parts]))
    rows.append(_row("comparison key", [i.comparisonKey for i in ident]))
    return rows


def _groups(rows: list[Any], views: list[Run]) -> list[CompareGroup]:
    """Runs by comparison key; inside a group of two or more, each value over the group's best."""
    by_key: dict[str | None, list[int]] = {}
    for i, row in enumerate(rows):
        by_key.setdefault(row.comparison_key, []).append(i)
    out = []
    for key, members in by_key.items():
        ratios = []
        values = [(i, rows[i].primary_value) for i in members if rows[i].primary_value]
        if key is not None and len(values) >= 2:
            lower = views[members[0]].primary.direction.startswith("lower")
            best = min(v for _, v in values) if lower else max(v for _, v in values)
            for i, v in values:
                ratios.append(
                    GroupRatio(
                        runId=rows[i].id,
                        label=LABELS[i],
                        ratio=v / best,
                        text=f"{v / best:.3f}× the best of this group",
                    )
                )
        out.append(CompareGroup(comparisonKey=key, runIds=[rows[i].id for i in members], ratios=ratios))
    return out


def _markdown(views: list[Run], fields: list[CompareField], statement: str | None) -> str:
    def cell(text: Any) -> str:
        return ("—" if text is None else str(text)).replace("|", "\\|").replace("\n", " ")

    head = "| field | " + " | ".join(f"{LABELS[i]}" for i in range(len(views))) + " |"
    lines = [head, "|---" * (len(views) + 1) + "|"]
    for f in fields:
        lines.append(
            f"| {cell(f.field)}{'' if f.same else ' (differs)'} | " + " | ".join(cell(v) for v in f.values) + " |"
        )
    lines.append("")
    for i, v in enumerate(views):
        lines.append(f"{LABELS[i]}: {v.citation.permalink}")
    if statement:
        lines += ["", statement]
    return "\n".join(lines) + "\n"


def _compared_rank(rank: GroupRank | PendingRank) -> ComparedRank | PendingRank:
    return (
        ComparedRank(**rank.model_dump(exclude={"interval"}), interval=rank.interval)
        if isinstance(rank, GroupRank)
        else rank
    )


def compare_runs(conn: Connection, rows: list, base_url: str, today: date) -> Compare:
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
        direction = views[0].primary.direction
        if ratio == 1:
            statement = "A and B have the same value"
        else:
            a_better = ratio < 1 if direction.startswith("lower") else ratio > 1
            factor = max(ratio, 1 / ratio)
            statement = (
                f"{'A' if a_better else 'B'} is {factor:.3f}× better than {'B' if a_better else 'A'} ({direction})"
            )
    fields = _fields(views, parts)
    query = "&".join(f"run={row.id}" for row in rows)
    return Compare(
        runs=[
            ComparedRun(
                label=LABELS[i],
                id=v.id,
                digest=v.digest,
                title=v.title,
                status=v.status,
                evidence=v.evidence,
                primary=v.primary,
                rank=_compared_rank(v.rank),
                observedDate=v.observedDate,
                comparisonKey=v.identity.comparisonKey,
                permalink=v.citation.permalink,
                links=v.links,
            )
            for i, v in enumerate(views)
        ],
        comparable=comparable,
        fields=fields,
        differingParts=differs,
        groups=groups,
        ratio=ratio,
        ratioDefinition="value(A) / value(B), given only when both runs share one comparison key",
        statement=statement,
        markdown=_markdown(views, fields, statement),
        links=CompareLinks(self=f"/compare?{query}", json_=f"/api/v1/compare?{query}", markdown=f"/compare.md?{query}"),
    )


def compare_view(conn: Connection, idents: list[str], base_url: str, today: date) -> Compare:
    """The runs ``idents`` names (id, digest or 8+ hex prefix), compared: what ``/compare``, its JSON and
    Markdown twins, ``kernelindex compare`` and the MCP ``compare_runs`` tool show."""
    check_count(len(idents))
    rows = [resolve_run(conn, ident) for ident in idents]
    seen: dict[str, str] = {}
    for ident, row in zip(idents, rows):
        if row.id in seen:
            raise BadParameter(
                "duplicate-run",
                f"{ident!r} and {seen[row.id]!r} name the same run ({row.id}); compare distinct runs",
                parameter="run",
            )
        seen[row.id] = ident
    return compare_runs(conn, rows, base_url, today)
