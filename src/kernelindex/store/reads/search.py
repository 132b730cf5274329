"""The reads behind search answers: the operation catalogue, workloads with their axes, the runs
of those workloads with what the filters need, and lookups by digest prefix or by name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Text, and_, cast, func, or_, select, tuple_

from kernelindex.records.vocabulary import RunStatus
from kernelindex.store.evidence.tables import attestations
from kernelindex.store.reads.run_facts import made_by_harness
from kernelindex.store.tables import (
    environments,
    implementations,
    operation_aliases,
    operations,
    projects,
    runs,
    sources,
    workloads,
)

ENTITY_LIMIT = 20


@dataclass
class OperationEntry:
    id: str
    slug: str
    name: str | None
    family: str | None
    digest: str
    axis_names: tuple[str, ...]
    aliases: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WorkloadEntry:
    id: str
    digest: str
    kind: str
    operation_id: str | None
    title: str
    axes: dict[str, Any]
    dtypes: frozenset[str]
    suite_cases: tuple[dict[str, Any], ...]  # a suite's cases' axes


@dataclass(frozen=True)
class RunCombo:
    """Passed runs of one workload in one comparison group, from one source on one hardware."""

    workload_id: str
    comparison_key: str
    hardware_model: str | None
    hardware_architecture: str | None
    source_slug: str | None
    count: int


def operation_catalogue(conn: Connection) -> list[OperationEntry]:
    """Every operation with its aliases and axis names: a few hundred small rows, read whole."""
    axes = operations.c.manifest["spec"]["axes"]
    entries = {
        r.id: OperationEntry(r.id, r.slug, r.name, r.family, r.semantic_digest, tuple((r.axes or {}).keys()))
        for r in conn.execute(
            select(
                operations.c.id,
                operations.c.slug,
                operations.c.name,
                operations.c.family,
                operations.c.semantic_digest,
                axes.label("axes"),
            ).order_by(operations.c.seq)
        )
    }
    for op_id, alias in conn.execute(select(operation_aliases.c.operation_id, operation_aliases.c.alias)):
        if op_id in entries:
            entries[op_id].aliases.append(alias)
    return list(entries.values())


def catalogue_signature(conn: Connection) -> tuple:
    """Row counts and last sequence numbers of operations and aliases: they change when either grows."""
    ops = conn.execute(select(func.count(), func.max(operations.c.seq))).one()
    aliases = conn.execute(select(func.count(), func.max(operation_aliases.c.seq))).one()
    return (*ops, *aliases)


def source_slugs(conn: Connection) -> list[str]:
    return list(conn.scalars(select(sources.c.slug)))


def _dtypes(spec: dict[str, Any]) -> frozenset[str]:
    tensors = (spec.get("tensors") or {}).values()
    return frozenset(str(t["dtype"]).lower() for t in tensors if isinstance(t, dict) and t.get("dtype"))


def workloads_of(conn: Connection, operation_ids: Sequence[str]) -> list[WorkloadEntry]:
    """The workloads of the given operations, with their axes, dtypes and (for suites) their cases' axes."""
    if not operation_ids:
        return []
    spec = workloads.c.manifest["spec"]
    query = (
        select(
            workloads.c.id,
            workloads.c.workload_digest,
            workloads.c.kind,
            workloads.c.operation_id,
            workloads.c.name,
            workloads.c.manifest["metadata"]["title"].as_string().label("title"),
            spec.label("spec"),
        )
        .where(workloads.c.operation_id.in_(operation_ids))
        .order_by(workloads.c.seq)
    )
    out = []
    for r in conn.execute(query):
        s = r.spec or {}
        cases = tuple(c.get("axes") or {} for c in s.get("cases") or [] if isinstance(c, dict))
        out.append(
            WorkloadEntry(
                r.id,
                r.workload_digest,
                r.kind,
                r.operation_id,
                r.title or r.name or r.id,
                dict(s.get("axes") or {}),
                _dtypes(s),
                cases,
            )
        )
    return out


def run_combos(conn: Connection, workload_ids: Sequence[str]) -> list[RunCombo]:
    """The passed, grouped runs of these workloads, counted per workload, group, hardware and source:
    what the GPU and source filters need, in as many rows as there are distinct combinations."""
    if not workload_ids:
        return []
    cols = (
        runs.c.workload_id,
        runs.c.comparison_key,
        runs.c.hardware_model,
        runs.c.hardware_architecture,
        runs.c.source_slug,
        runs.c.status,
    )
    # status is compared here, not in SQL: with it in the WHERE clause SQLite walks the (unselective)
    # status index instead of ix_runs_workload_key
    query = (
        select(*cols, func.count())
        .where(runs.c.workload_id.in_(workload_ids), runs.c.comparison_key.isnot(None))
        .group_by(*cols)
    )
    return [
        RunCombo(workload_id, key, hardware, architecture, source, count)
        for workload_id, key, hardware, architecture, source, status, count in conn.execute(query)
        if status == RunStatus.PASSED
    ]


def evidence_candidates(conn: Connection, *, workload_ids: Sequence[str] = (), keys: Sequence[str] = ()) -> list[Any]:
    """Passed runs (of these workloads, or in these groups) that may hold more than ``reported`` evidence.

    A narrowing read, not a decision: a run can be above ``reported`` only if it has raw evidence
    (reproducible), comes from a controlled source or the harness, shares implementation, workload
    and protocol with a harness run, or has an attested reproduction (verified, replicated). The
    level of each candidate still comes from :func:`kernelindex.ranking.evidence_facts.evidence_for_runs`;
    every other run is ``reported``. Rows: digest, workload_id, comparison_key, hardware, source.
    """
    scope = runs.c.workload_id.in_(workload_ids) if workload_ids else runs.c.comparison_key.in_(keys)
    if not workload_ids and not keys:
        return []
    harness = made_by_harness()
    triples = conn.execute(
        select(runs.c.implementation_digest, runs.c.workload_digest, runs.c.protocol_key)
        .distinct()
        .where(scope, harness)
    ).all()
    attested = select(attestations.c.run_digest).where(attestations.c.reproduction_run_digest.isnot(None))
    maybe = [runs.c.has_raw_evidence.is_(True), harness, runs.c.run_digest.in_(attested)]
    if triples:
        maybe.append(
            tuple_(runs.c.implementation_digest, runs.c.workload_digest, runs.c.protocol_key).in_(
                [tuple(t) for t in triples]
            )
        )
    query = select(
        runs.c.run_digest,
        runs.c.workload_id,
        runs.c.comparison_key,
        runs.c.hardware_model,
        runs.c.hardware_architecture,
        runs.c.source_slug,
        runs.c.status,
    ).where(scope, runs.c.comparison_key.isnot(None), or_(*maybe))
    return [r for r in conn.execute(query) if r.status == RunStatus.PASSED]  # status in Python: see run_combos


def licensed_groups(conn: Connection, workload_ids: Sequence[str], text: str) -> set[tuple[str, str]]:
    """(workload id, comparison key) of passed runs whose implementation's licensing or whose source's
    policy mentions ``text`` (case-insensitive)."""
    if not workload_ids:
        return set()
    like = _escape_like(text)
    licence = func.lower(cast(implementations.c.manifest["spec"]["licensing"], Text)).like(like, escape="\\")
    policy = func.lower(cast(sources.c.policy, Text)).like(like, escape="\\")
    query = (
        select(runs.c.workload_id, runs.c.comparison_key)
        .distinct()
        .outerjoin(implementations, implementations.c.id == runs.c.implementation_id)
        .outerjoin(sources, sources.c.id == runs.c.source_id)
        .where(runs.c.workload_id.in_(workload_ids), runs.c.status == RunStatus.PASSED.value, or_(licence, policy))
    )
    return {(r.workload_id, r.comparison_key) for r in conn.execute(query)}


def _prefix_range(column, prefix: str):
    """``column`` starts with ``sha256:prefix``, as a range an index answers (LIKE may not use one)."""
    low = "sha256:" + prefix
    return and_(column >= low, column < low + "\uffff")


def digest_matches(conn: Connection, prefix: str) -> list[dict[str, Any]]:
    """Records whose digest starts with ``prefix`` (hex, no ``sha256:``): runs, workloads,
    implementations, operations and comparison groups."""
    out: list[dict[str, Any]] = []
    for r in conn.execute(
        select(runs.c.id, runs.c.run_digest, runs.c.manifest["run"]["metadata"]["title"].as_string().label("title"))
        .where(_prefix_range(runs.c.run_digest, prefix))
        .limit(ENTITY_LIMIT)
    ):
        out.append(
            {
                "kind": "run",
                "id": r.id,
                "digest": r.run_digest,
                "title": r.title or r.run_digest,
                "href": f"/runs/{r.id}",
            }
        )
    for r in conn.execute(
        select(workloads.c.id, workloads.c.workload_digest, workloads.c.name)
        .where(_prefix_range(workloads.c.workload_digest, prefix))
        .limit(ENTITY_LIMIT)
    ):
        out.append(
            {
                "kind": "workload",
                "id": r.id,
                "digest": r.workload_digest,
                "title": r.name or r.id,
                "href": f"/workloads/{r.id}",
            }
        )
    for r in conn.execute(
        select(
            implementations.c.id,
            implementations.c.implementation_digest,
            implementations.c.title,
            implementations.c.slug,
        )
        .where(_prefix_range(implementations.c.implementation_digest, prefix))
        .limit(ENTITY_LIMIT)
    ):
        out.append(
            {
                "kind": "implementation",
                "id": r.id,
                "digest": r.implementation_digest,
                "title": r.title or r.slug or r.id,
                "href": None,
            }
        )
    for r in conn.execute(
        select(operations.c.slug, operations.c.semantic_digest, operations.c.name)
        .where(_prefix_range(operations.c.semantic_digest, prefix))
        .limit(ENTITY_LIMIT)
    ):
        out.append(
            {
                "kind": "operation",
                "id": r.slug,
                "digest": r.semantic_digest,
                "title": r.name or r.slug,
                "href": f"/operations/{r.slug}",
            }
        )
    key = conn.scalar(select(runs.c.comparison_key).where(_prefix_range(runs.c.comparison_key, prefix)).limit(1))
    if key is not None:
        out.append({"kind": "comparison group", "id": key, "digest": key, "title": key, "href": f"/rankings/{key}"})
    return out


def _escape_like(word: str) -> str:
    return "%" + word.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@dataclass(frozen=True)
class ImplementationEntry:
    """One implementation as search matches it: the texts a word may be found in, lowercased, and its run count."""

    id: str
    title: str  # its own, else its slug
    digest: str
    project: str | None
    operation: str | None
    runs: int
    text: str  # title, slug, project slug and project name, lowercased, apart by a character no word holds


def implementation_catalogue(conn: Connection) -> list[ImplementationEntry]:
    """Every implementation with what a search matches it by, busiest first (ties: oldest first). One scan
    of the table and one count of runs per implementation, for a caller to keep while the store is unchanged:
    matching a word then costs a substring test per implementation, not a scan of the table's wide rows
    with four ``lower() LIKE`` per row (~5 ms a search on the sample)."""
    counts = (
        select(runs.c.implementation_id, func.count().label("runs"))
        .where(runs.c.implementation_id.isnot(None))
        .group_by(runs.c.implementation_id)
        .subquery()
    )
    run_count = func.coalesce(counts.c.runs, 0).label("runs")
    query = (
        select(
            implementations.c.id,
            implementations.c.slug,
            implementations.c.title,
            implementations.c.implementation_digest,
            projects.c.slug.label("project"),
            projects.c.name.label("project_name"),
            operations.c.slug.label("operation"),
            run_count,
        )
        .outerjoin(projects, projects.c.id == implementations.c.project_id)
        .outerjoin(operations, operations.c.id == implementations.c.operation_id)
        .outerjoin(counts, counts.c.implementation_id == implementations.c.id)
        .order_by(run_count.desc(), implementations.c.seq)
    )
    return [
        ImplementationEntry(
            id=r.id,
            title=r.title or r.slug,
            digest=r.implementation_digest,
            project=r.project,
            operation=r.operation,
            runs=int(r.runs),
            text="\n".join(t or "" for t in (r.title, r.slug, r.project, r.project_name)).lower(),
        )
        for r in conn.execute(query)
    ]


def pending_implementation_matches(conn: Connection, words: Sequence[str]) -> list[dict[str, Any]]:
    """Implementations known only from their runs (a run bundle names its implementation by digest; the
    record may never arrive, as with the sample's seeds): those whose runs' titles hold every word (the
    author leads a title, ``ac4k · 042_…``), one entry per implementation, busiest first."""
    if not words:
        return []
    title = runs.c.manifest["run"]["metadata"]["title"].as_string()
    query = (
        select(
            runs.c.implementation_digest,
            func.min(title).label("title"),
            func.min(runs.c.id).label("run_id"),
            func.min(operations.c.slug).label("operation"),
            func.count().label("runs"),
        )
        .outerjoin(workloads, workloads.c.id == runs.c.workload_id)
        .outerjoin(operations, operations.c.id == workloads.c.operation_id)
        .where(
            runs.c.implementation_id.is_(None), *(func.lower(title).like(_escape_like(w), escape="\\") for w in words)
        )
        .group_by(runs.c.implementation_digest)
        .order_by(func.count().desc(), runs.c.implementation_digest)
        .limit(ENTITY_LIMIT)
    )
    return [
        {
            "digest": r.implementation_digest,
            "title": r.title,
            "runId": r.run_id,
            "operation": r.operation,
            "runCount": r.runs,
        }
        for r in conn.execute(query)
    ]


def run_titles(conn: Connection, run_ids: Sequence[str]) -> dict[str, str]:
    """Each run's title: its own, else its implementation's."""
    if not run_ids:
        return {}
    query = (
        select(
            runs.c.id,
            runs.c.manifest["run"]["metadata"]["title"].as_string().label("title"),
            implementations.c.title.label("impl"),
        )
        .outerjoin(implementations, implementations.c.id == runs.c.implementation_id)
        .where(runs.c.id.in_(sorted(set(run_ids))))
    )
    return {r.id: r.title or r.impl or r.id for r in conn.execute(query)}


def environment_hardware(conn: Connection) -> list[tuple[str, str | None, str | None]]:
    """(environment digest, hardware model, architecture) of every stored environment (a few rows)."""
    query = select(
        environments.c.environment_digest, environments.c.hardware_model, environments.c.hardware_architecture
    )
    return [tuple(r) for r in conn.execute(query)]


def operations_with_runs(
    conn: Connection, environment_keys: Sequence[str] | None, source_slugs: Sequence[str] | None, limit: int = 50
) -> list[str]:
    """Ids of operations that have a run under one of these environments and from one of these sources
    (None: any), busiest first."""
    conds = [runs.c.workload_id == workloads.c.id]
    if environment_keys is not None:
        conds.append(runs.c.environment_key.in_(environment_keys))
    if source_slugs is not None:
        conds.append(runs.c.source_slug.in_(source_slugs))
    query = (
        select(workloads.c.operation_id, func.count().label("n"))
        .select_from(runs)
        .join(workloads, conds[0])
        .where(*conds[1:], workloads.c.operation_id.isnot(None))
        .group_by(workloads.c.operation_id)
        .order_by(func.count().desc())
        .limit(limit)
    )
    return [r.operation_id for r in conn.execute(query)]
