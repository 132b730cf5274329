"""Gathering the stored facts a run's evidence level is derived from, for many runs at once.

Pages, the JSON API and the CLI all call :func:`evidence_for_runs`, which hands the facts to
:func:`kernelindex.ranking.evidence.evidence_level`; nothing else decides a level.
A harness run counts toward replication only if its signature by its own runner key verifies
now (``runner_id`` is the key id), so a runner identity cannot be claimed by writing a column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, or_, select

from kernelindex.ranking.evidence import evidence_level
from kernelindex.store.evidence_store import HARNESS_SOURCE, signature_checks
from kernelindex.store.evidence_tables import attestations
from kernelindex.store.reads.run_facts import retractions
from kernelindex.store.tables import implementations, runs, sources, workloads

_RUN_COLUMNS = (
    runs.c.id,
    runs.c.run_digest,
    runs.c.status,
    runs.c.source_slug,
    runs.c.implementation_digest,
    runs.c.implementation_id,
    runs.c.workload_digest,
    runs.c.workload_id,
    runs.c.protocol_key,
    runs.c.runner_id,
    runs.c.runner_host,
    runs.c.has_raw_evidence,
    sources.c.kind.label("source_kind"),
)


@dataclass(frozen=True)
class Evidence:
    level: str
    reasons: tuple[str, ...]
    facts: Mapping[str, Any] = field(repr=False)


def _is_harness(row: Any) -> bool:
    return row.source_slug == HARNESS_SOURCE or row.source_kind == "controlled"


def _has_source(manifest: Mapping[str, Any] | None) -> bool:
    spec = (manifest or {}).get("spec") or {}
    revision = spec.get("projectRevision") or {}
    stated = (spec.get("source") or {}).get("contentDigest")
    return bool(stated or (revision.get("repository") and revision.get("commit")))


def _rows(conn: Connection, condition) -> list[Any]:
    query = select(*_RUN_COLUMNS).select_from(runs.outerjoin(sources, sources.c.id == runs.c.source_id))
    return conn.execute(query.where(condition)).all()


def evidence_for_runs(conn: Connection, run_digests: Iterable[str]) -> dict[str, Evidence]:
    """Run digest -> its evidence level, reasons and the facts they came from."""
    digests = sorted(set(run_digests))
    if not digests:
        return {}
    rows = _rows(conn, runs.c.run_digest.in_(digests))
    by_digest = {row.run_digest: row for row in rows}

    impl_ids = [r.implementation_id for r in rows if r.implementation_id]
    has_source = {
        row.id: _has_source(row.manifest)
        for row in conn.execute(
            select(implementations.c.id, implementations.c.manifest).where(implementations.c.id.in_(impl_ids))
        )
    }
    stored_workloads = {
        row[0]
        for row in conn.execute(
            select(workloads.c.id).where(workloads.c.id.in_([r.workload_id for r in rows if r.workload_id]))
        )
    }

    # Harness runs that count for each run: itself, repeats linked by attestation, and harness
    # runs of the same implementation, workload and protocol (the same measurement elsewhere).
    linked: dict[str, set[str]] = {d: set() for d in digests}
    for row in conn.execute(
        select(attestations.c.run_digest, attestations.c.reproduction_run_digest).where(
            attestations.c.run_digest.in_(digests), attestations.c.reproduction_run_digest.is_not(None)
        )
    ):
        linked[row.run_digest].add(row.reproduction_run_digest)
    harness_identity = {(r.implementation_digest, r.workload_digest, r.protocol_key) for r in rows if _is_harness(r)}
    siblings: dict[tuple, list[Any]] = {}
    if harness_identity:
        condition = or_(
            *(
                (runs.c.implementation_digest == i) & (runs.c.workload_digest == w) & (runs.c.protocol_key == p)
                for i, w, p in sorted(harness_identity)
            )
        )
        for row in _rows(conn, condition):
            if _is_harness(row):
                siblings.setdefault((row.implementation_digest, row.workload_digest, row.protocol_key), []).append(row)
    linked_rows = {
        row.run_digest: row for row in _rows(conn, runs.c.run_digest.in_(sorted(set().union(*linked.values()))))
    }
    candidates: dict[str, list[Any]] = {}
    for digest, row in by_digest.items():
        same = siblings.get((row.implementation_digest, row.workload_digest, row.protocol_key), [])
        found = {r.run_digest: r for r in same}
        if _is_harness(row):
            found[row.run_digest] = row
        for other in linked[digest]:
            if other in linked_rows and _is_harness(linked_rows[other]):
                found[other] = linked_rows[other]
        candidates[digest] = [found[key] for key in sorted(found)]
    all_candidates = {r.run_digest: r for rs in candidates.values() for r in rs}
    checks = signature_checks(conn, sorted(all_candidates))
    retracted = retractions(conn, {r.id for r in rows} | {r.id for r in all_candidates.values()})

    def signed_by_runner(candidate: Any) -> bool:
        return any(c.valid and c.key_id == candidate.runner_id for c in checks.get(candidate.run_digest, []))

    out: dict[str, Evidence] = {}
    for digest, row in by_digest.items():
        missing_identity = [
            name
            for name, present in (
                ("implementation", row.implementation_id is not None and row.implementation_id in has_source),
                ("workload", row.workload_id is not None and row.workload_id in stored_workloads),
            )
            if not present
        ]
        facts = {
            "run_digest": digest,
            "status": row.status,
            "source": row.source_slug,
            "source_kind": row.source_kind or ("controlled" if _is_harness(row) else None),
            "retracted_at": retracted[row.id].at if row.id in retracted else None,
            "has_source": has_source.get(row.implementation_id, False),
            "full_identity": not missing_identity,
            "missing_identity": missing_identity,
            "has_raw_evidence": bool(row.has_raw_evidence),
            "verified_runs": [
                {
                    "run_digest": c.run_digest,
                    "runner_id": c.runner_id,
                    "runner_host": c.runner_host,
                    "status": c.status,
                    "signed": signed_by_runner(c),
                }
                for c in candidates[digest]
                if c.status == "passed" and c.id not in retracted
            ],
        }
        level, reasons = evidence_level(facts)
        out[digest] = Evidence(level, tuple(reasons), facts)
    return out


def evidence_for_run(conn: Connection, run_digest: str) -> Evidence | None:
    return evidence_for_runs(conn, [run_digest]).get(run_digest)
