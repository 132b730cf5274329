"""Ranking over the store: load a group's runs as plain :class:`RankInput` and rank them.

Pages, the JSON API and ``kernelindex rank`` all come through here and :func:`rank_group`, so
the three never disagree about a rank, a tie or an exclusion.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, select

from kernelindex.ranking.cohort import RankedGroup, RankInput, rank_group
from kernelindex.store.reads.run_facts import retractions, superseded_ids
from kernelindex.store.tables import artifacts, run_artifacts, runs

RAW_SAMPLES_ROLE = "rawSamples"
RANK_COLUMNS = (
    runs.c.id,
    runs.c.run_digest,
    runs.c.comparison_key,
    runs.c.status,
    runs.c.primary_value,
    runs.c.primary_metric,
    runs.c.primary_statistic,
    runs.c.primary_unit,
    runs.c.observed_at,
    runs.c.retracted_at,
    runs.c.has_raw_evidence,
)


def parse_samples(content: bytes | None) -> tuple[float, ...] | None:
    """Raw timing samples stored as JSON: a list of numbers or ``{"samples": [...]}``."""
    if not content:
        return None
    try:
        data = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(data, dict):
        data = data.get("samples") or data.get("latencyNs")
    if not isinstance(data, list) or not all(isinstance(x, (int, float)) for x in data):
        return None
    return tuple(float(x) for x in data)


def _samples(conn: Connection, run_ids: Sequence[str]) -> dict[str, tuple[float, ...]]:
    if not run_ids:
        return {}
    query = (
        select(run_artifacts.c.run_id, artifacts.c.content)
        .join(artifacts, artifacts.c.id == run_artifacts.c.artifact_id)
        .where(run_artifacts.c.role == RAW_SAMPLES_ROLE, run_artifacts.c.run_id.in_(run_ids))
    )
    out = {}
    for run_id, content in conn.execute(query):
        parsed = parse_samples(content)
        if parsed:
            out[run_id] = parsed
    return out


def rank_inputs(conn: Connection, keys: Iterable[str] | None = None, *,
                workload_id: str | None = None) -> list[RankInput]:
    """Every run of the given comparison groups (or of every group of one workload), as ranking input."""
    if workload_id is not None:
        # The key includes the workload, so the workload's groups are exactly its keys' runs; both
        # reads are index-only (ix_runs_workload_key, then ix_runs_rank_cover).
        keys = conn.scalars(select(runs.c.comparison_key).distinct().where(
            runs.c.workload_id == workload_id, runs.c.comparison_key.isnot(None))).all()
    keys = sorted(set(keys or ()))
    if not keys:
        return []
    rows = conn.execute(select(*RANK_COLUMNS).where(runs.c.comparison_key.in_(keys))).all()
    superseded = superseded_ids(conn)
    retracted = retractions(conn)  # few: read whole rather than as a long IN list
    samples = _samples(conn, [r[0] for r in rows if r[-1]])  # has_raw_evidence
    return [
        RankInput(run_id, key, status, value, metric, statistic, unit, observed, run_id in retracted,
                  run_id in superseded, samples.get(run_id), digest)
        for (run_id, digest, key, status, value, metric, statistic, unit, observed, _retracted_at, _raw) in rows
    ]


def _rank_by_key(inputs: list[RankInput]) -> dict[str, RankedGroup]:
    by_key: dict[str, list[RankInput]] = {}
    for run in inputs:
        by_key.setdefault(run.comparison_key, []).append(run)
    return {key: rank_group(group) for key, group in sorted(by_key.items())}


def ranked_groups(conn: Connection, keys: Iterable[str]) -> dict[str, RankedGroup]:
    """Each comparison group ranked; a group in ``keys`` with no runs is left out."""
    return _rank_by_key(rank_inputs(conn, keys))


def workload_groups(conn: Connection, workload_id: str) -> dict[str, RankedGroup]:
    """Every comparison group of one workload, ranked (the key includes the workload)."""
    return _rank_by_key(rank_inputs(conn, workload_id=workload_id))


def ranked_group(conn: Connection, key: str) -> RankedGroup | None:
    return ranked_groups(conn, [key]).get(key)
