"""Ranked comparison groups as shown: a workload's groups, one group fully listed, the groups a target names.

A group has one shape, :class:`Group`. ``GET /api/v1/rankings/{key}`` and a workload's own groups
have always listed the same fields in another order, with numbers as floats: :class:`Ranking`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from kernelindex.ranking.cohort import REASON_TEXT, RankedGroup
from kernelindex.ranking.reads import ranked_groups, workload_groups
from kernelindex.records.canonical import metric_key
from kernelindex.store.reads import groups
from kernelindex.store.reads.lookup import resolve_rank_target
from kernelindex.views.common import (
    GROUP_ROWS_SHOWN,
    EvidenceLevel,
    Interval,
    Number,
    ViewModel,
    evidence_levels,
    group_url,
    interval_of,
    native_scores,
)
from kernelindex.views.formatting import format_date, format_value, short_digest

if TYPE_CHECKING:
    from sqlalchemy import Connection


class ProtocolLabel(ViewModel):
    digest: str | None
    title: str | None
    family: str | None


class EnvironmentLabel(ViewModel):
    digest: str | None
    title: str | None
    hardware: str | None


class GroupRow(ViewModel):
    rank: int
    tied: bool
    runId: str
    digest: str | None
    title: str
    value: float | None
    display: str
    interval: Interval | None
    evidence: EvidenceLevel | None
    observedAt: str | None
    date: str
    sol: Number | None = Field(description="SOL score as the source states it")
    solDisplay: str
    speedup: Number | None = Field(description="speedup over the reference as the source states it")
    speedupDisplay: str


class Excluded(ViewModel):
    runId: str
    title: str
    reasons: list[str]
    reasonText: list[str]


class HistoryEvent(ViewModel):
    runId: str | None
    previousRunId: str | None
    cause: str
    at: str
    policyVersion: str | None


class Group(ViewModel):
    """One comparison group: its rule, its best rows, every exclusion and the leader history."""

    comparisonKey: str
    anchor: str
    url: str | None
    metric: str | None
    statistic: str | None
    unit: str | None
    metricKey: str
    direction: str
    tieRule: str
    protocol: ProtocolLabel | None
    environment: EnvironmentLabel | None
    size: int
    rows: list[GroupRow]
    rowsShown: int
    excluded: list[Excluded]
    history: list[HistoryEvent]


class RankingRow(ViewModel):
    """:class:`GroupRow` in the ranking document's order."""

    rank: int
    tied: bool
    runId: str
    digest: str | None
    title: str
    value: float | None
    display: str
    sol: float | None = Field(description="SOL score as the source states it")
    speedup: float | None = Field(description="speedup over the reference as the source states it")
    evidence: EvidenceLevel | None
    interval: Interval | None
    observedAt: str | None
    date: str
    solDisplay: str
    speedupDisplay: str


class Ranking(ViewModel):
    """:class:`Group` in the ranking document's order (``GET /api/v1/rankings/{key}``, a workload's own groups)."""

    comparisonKey: str
    metricKey: str
    direction: str
    tieRule: str
    size: int
    rows: list[RankingRow]
    excluded: list[Excluded]
    history: list[HistoryEvent]
    anchor: str
    url: str | None
    metric: str | None
    statistic: str | None
    unit: str | None
    protocol: ProtocolLabel | None
    environment: EnvironmentLabel | None
    rowsShown: int


class RankedTarget(ViewModel):
    """``GET /api/v1/rankings?target=``: what ``kernelindex rank TARGET`` prints."""

    target: str
    groups: list[Group]


def ranking_of(group: Group) -> Ranking:
    return Ranking.model_validate(group.model_dump())


def _labels(conn: Connection, briefs) -> dict[str, tuple[ProtocolLabel, EnvironmentLabel]]:
    """Protocol and environment of each group, read off any of its shown runs (the key holds both)."""
    pairs = {b.comparison_key: (b.protocol_key, b.environment_key) for b in briefs}
    proto = groups.protocol_labels(conn, {p for p, _ in pairs.values()})
    env = groups.environment_labels(conn, {e for _, e in pairs.values()})
    out = {}
    for key, (pkey, ekey) in pairs.items():
        p, e = proto.get(pkey), env.get(ekey)
        out[key] = (
            ProtocolLabel(digest=pkey, title=(p.title or p.name) if p else None, family=p.family if p else None),
            EnvironmentLabel(
                digest=ekey, title=(e.title or e.name) if e else None, hardware=e.hardware_model if e else None
            ),
        )
    return out


def _row_title(brief) -> str:
    return brief.run_title or brief.impl_title or short_digest(brief.run_digest)


def group_view(
    group: RankedGroup,
    briefs: dict[str, Any],
    label: tuple[ProtocolLabel, EnvironmentLabel] | None,
    history: list[dict[str, Any]],
    evidence: dict[str, dict[str, Any]],
    limit: int | None = GROUP_ROWS_SHOWN,
) -> Group:
    entries = group.entries if limit is None else group.entries[:limit]
    rows = []
    for e in entries:
        b = briefs.get(e.run.run_id)
        level = evidence.get(e.run.digest) if e.run.digest else None
        rows.append(
            GroupRow(
                rank=e.rank,
                tied=e.tied,
                runId=e.run.run_id,
                digest=e.run.digest,
                title=_row_title(b) if b is not None else e.run.run_id,
                value=e.run.value,
                display=format_value(e.run.value, group.unit),
                interval=interval_of(e, group.unit),
                evidence=EvidenceLevel(**level) if level else None,
                observedAt=e.run.observed_at,
                date=format_date(e.run.observed_at),
                **native_scores(b.native_metrics if b is not None else None),
            )
        )
    workload_id = next((b.workload_id for b in briefs.values() if b.comparison_key == group.comparison_key), None)
    return Group(
        comparisonKey=group.comparison_key,
        anchor="g-" + group.comparison_key.removeprefix("sha256:")[:16],
        url=group_url(workload_id, group.comparison_key),
        metric=group.metric,
        statistic=group.statistic,
        unit=group.unit,
        metricKey=metric_key(group.metric, group.statistic, group.unit),
        direction=group.direction_text,
        tieRule=group.tie_rule,
        protocol=label[0] if label else None,
        environment=label[1] if label else None,
        size=group.size,
        rows=rows,
        rowsShown=len(rows),
        excluded=[
            Excluded(
                runId=x.run.run_id,
                title=_row_title(briefs[x.run.run_id]) if x.run.run_id in briefs else x.run.run_id,
                reasons=list(x.reasons),
                reasonText=[REASON_TEXT[r] for r in x.reasons],
            )
            for x in group.excluded
        ],
        history=history,
    )


def groups_view(conn: Connection, ranked: dict[str, RankedGroup], limit: int | None = GROUP_ROWS_SHOWN) -> list[Group]:
    """Ranked groups as shown: the best ``limit`` rows of each (and every exclusion)."""
    if not ranked:
        return []
    shown = [e.run.run_id for g in ranked.values() for e in (g.entries if limit is None else g.entries[:limit])]
    shown += [x.run.run_id for g in ranked.values() for x in g.excluded]
    briefs = groups.run_briefs(conn, shown)
    evidence = evidence_levels(conn, [b.run_digest for b in briefs.values()])
    labels = _labels(conn, briefs.values())
    history = groups.group_history(conn, list(ranked))
    views = [group_view(g, briefs, labels.get(k), history.get(k, []), evidence, limit) for k, g in ranked.items()]
    views.sort(key=lambda v: (-v.size, v.comparisonKey))
    return views


def ranking_view(conn: Connection, key: str) -> Group | None:
    """One comparison group, fully listed (``/rankings/{key}`` and its JSON twin, as :func:`ranking_of`)."""
    views = groups_view(conn, ranked_groups(conn, [key]), None)
    return views[0] if views else None


def rank_groups(conn: Connection, target: str, limit: int | None = None) -> list[Group]:
    """Every ranked group of the comparison key, workload, operation or run ``target`` names, best ``limit`` rows
    of each; raises :class:`~kernelindex.store.reads.lookup.LookupFailed` when it names nothing."""
    found = resolve_rank_target(conn, target)
    if found.comparison_key is not None:
        ranked = ranked_groups(conn, [found.comparison_key])
    else:
        ranked = {k: g for w in found.workload_ids for k, g in workload_groups(conn, w).items()}
    return groups_view(conn, ranked, limit)
