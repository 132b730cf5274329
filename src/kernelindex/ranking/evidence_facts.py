"""Gathering the stored facts a run's evidence level is derived from, for many runs at once.

Pages, the JSON API and the CLI all call :func:`evidence_for_runs`, which hands the facts to
:func:`kernelindex.ranking.evidence.evidence_level`; nothing else decides a level.
A harness run counts toward replication only if its signature by its own runner key verifies
now (``runner_id`` is the key id), so a runner identity cannot be claimed by writing a column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernelindex.ranking.evidence import evidence_level
from kernelindex.records.vocabulary import CONTROLLED, RunStatus, is_harness_source
from kernelindex.store.evidence.records import signature_checks
from kernelindex.store.reads.evidence import (
    evidence_rows,
    evidence_rows_measuring,
    implementation_manifests,
    reproductions,
    stored_workload_ids,
)
from kernelindex.store.reads.run_facts import retractions

if TYPE_CHECKING:
    from sqlalchemy import Connection


@dataclass(frozen=True)
class Evidence:
    level: str
    reasons: tuple[str, ...]
    facts: Mapping[str, Any] = field(repr=False)


def _has_source(manifest: Mapping[str, Any] | None) -> bool:
    spec = (manifest or {}).get("spec") or {}
    revision = spec.get("projectRevision") or {}
    stated = (spec.get("source") or {}).get("contentDigest")
    return bool(stated or (revision.get("repository") and revision.get("commit")))


def evidence_for_runs(conn: Connection, run_digests: Iterable[str]) -> dict[str, Evidence]:
    """Run digest -> its evidence level, reasons and the facts they came from."""
    digests = sorted(set(run_digests))
    if not digests:
        return {}
    rows = evidence_rows(conn, digests)
    by_digest = {row.run_digest: row for row in rows}

    impl_ids = [r.implementation_id for r in rows if r.implementation_id]
    manifests = implementation_manifests(conn, impl_ids)
    has_source = {impl_id: _has_source(manifest) for impl_id, manifest in manifests.items()}
    stored_workloads = stored_workload_ids(conn, [r.workload_id for r in rows if r.workload_id])

    # Harness runs that count for each run: itself, repeats linked by attestation, and harness
    # runs of the same implementation, workload and protocol (the same measurement elsewhere).
    linked: dict[str, set[str]] = {d: set() for d in digests}
    for run_digest, reproduction in reproductions(conn, digests):
        linked[run_digest].add(reproduction)
    harness_identity = {
        (r.implementation_digest, r.workload_digest, r.protocol_key)
        for r in rows
        if is_harness_source(r.source_slug, r.source_kind)
    }
    siblings: dict[tuple, list[Any]] = {}
    for row in evidence_rows_measuring(conn, harness_identity):
        if is_harness_source(row.source_slug, row.source_kind):
            siblings.setdefault((row.implementation_digest, row.workload_digest, row.protocol_key), []).append(row)
    linked_rows = {row.run_digest: row for row in evidence_rows(conn, set().union(*linked.values()))}
    candidates: dict[str, list[Any]] = {}
    for digest, row in by_digest.items():
        same = siblings.get((row.implementation_digest, row.workload_digest, row.protocol_key), [])
        found = {r.run_digest: r for r in same}
        if is_harness_source(row.source_slug, row.source_kind):
            found[row.run_digest] = row
        for other in linked[digest]:
            if other in linked_rows and is_harness_source(
                linked_rows[other].source_slug, linked_rows[other].source_kind
            ):
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
            "source_kind": row.source_kind
            or (CONTROLLED if is_harness_source(row.source_slug, row.source_kind) else None),
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
                if c.status == RunStatus.PASSED and c.id not in retracted
            ],
        }
        level, reasons = evidence_level(facts)
        out[digest] = Evidence(level, tuple(reasons), facts)
    return out


def evidence_for_run(conn: Connection, run_digest: str) -> Evidence | None:
    return evidence_for_runs(conn, [run_digest]).get(run_digest)
