"""What ranking reads: a group's runs (from the covering index), raw timing samples, recorded leaders."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, Row, bindparam, select

from kernelindex.store import tables as t
from kernelindex.store.reads.run_facts import RETRACTED

RAW_SAMPLES_ROLE = "rawSamples"
RANK_COLUMNS = (
    t.runs.c.id,
    t.runs.c.run_digest,
    t.runs.c.comparison_key,
    t.runs.c.status,
    t.runs.c.primary_value,
    t.runs.c.primary_metric,
    t.runs.c.primary_statistic,
    t.runs.c.primary_unit,
    t.runs.c.observed_at,
    t.runs.c.has_raw_evidence,
)


def all_comparison_keys(conn: Connection) -> list[str]:
    return list(conn.scalars(select(t.runs.c.comparison_key).where(t.runs.c.comparison_key.is_not(None)).distinct()))


def workload_comparison_keys(conn: Connection, workload_id: str) -> list[str]:
    """A workload's comparison keys (index-only: ix_runs_workload_key)."""
    return list(
        conn.scalars(
            select(t.runs.c.comparison_key)
            .distinct()
            .where(t.runs.c.workload_id == workload_id, t.runs.c.comparison_key.is_not(None))
        )
    )


_RANK_ROWS = select(*RANK_COLUMNS).where(t.runs.c.comparison_key.in_(bindparam("keys")))  # built once


def rank_rows(conn: Connection, keys: Sequence[str]) -> Sequence[Row]:
    """Every run of these comparison groups, ``RANK_COLUMNS`` only (index-only: ix_runs_rank_cover)."""
    return conn.execute(_RANK_ROWS, {"keys": list(keys)}).all()


def raw_sample_contents(conn: Connection, run_ids: Sequence[str]) -> list[tuple[str, bytes | None]]:
    """``(run id, stored bytes)`` of each run's raw timing samples artifact."""
    if not run_ids:
        return []
    link, art = t.run_artifacts, t.artifacts
    query = (
        select(link.c.run_id, art.c.content)
        .join(art, art.c.id == link.c.artifact_id)
        .where(link.c.role == RAW_SAMPLES_ROLE, link.c.run_id.in_(run_ids))
    )
    return [(row.run_id, row.content) for row in conn.execute(query)]


def last_recorded_leaders(conn: Connection, keys: Iterable[str]) -> dict[str, str | None]:
    """The leader each group's newest leader event names (groups with no event are absent)."""
    e = t.record_events
    query = (
        select(e.c.comparison_key, e.c.run_id)
        .where(e.c.comparison_key.in_(sorted(set(keys))), e.c.cause != RETRACTED)
        .order_by(e.c.at, e.c.seq)
    )
    return {key: run_id for key, run_id in conn.execute(query)}
