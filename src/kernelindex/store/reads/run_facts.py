"""Facts about a run that later records establish: is it retracted, is it superseded, and by what.

A run row is never edited; a retraction is one fact, a ``retracted`` event (a catalog row's
``retractedAt`` is stored as one too), and a successor is a run whose ``supersedes_id`` names it.
Every reader asks here, so the ranking, the evidence level, the pages, the API and the CLI never
disagree about either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, and_, bindparam, exists, select
from sqlalchemy.sql import ColumnElement

from kernelindex.records.vocabulary import CONTROLLED, HARNESS_SOURCE
from kernelindex.store import tables as t

RETRACTED = "retracted"  # record_events.cause of a retraction


def made_by_harness() -> ColumnElement[bool]:
    """``records.vocabulary.is_harness_source`` in SQL: the run's source is the harness's slug or
    a controlled source."""
    controlled = select(t.sources.c.id).where(t.sources.c.kind == CONTROLLED)
    return (t.runs.c.source_slug == HARNESS_SOURCE) | t.runs.c.source_id.in_(controlled)


@dataclass(frozen=True)
class Retraction:
    at: str | None
    reason: str | None


@dataclass(frozen=True)
class RunFacts:
    """What later records say about one run."""

    run_id: str
    retraction: Retraction | None = None
    superseded_by: str | None = None  # the id of the newest run that supersedes it
    superseded_by_digest: str | None = None

    @property
    def retracted(self) -> bool:
        return self.retraction is not None

    @property
    def superseded(self) -> bool:
        return self.superseded_by is not None


def retracted_clause(run_id: ColumnElement = t.runs.c.id) -> ColumnElement[bool]:
    """SQL: the run ``run_id`` names is retracted (for listings that filter or flag in one query)."""
    events = t.record_events
    return exists().where(and_(events.c.run_id == run_id, events.c.cause == RETRACTED))


# Built once, values bound per call: building a statement costs more than running it here.
_RETRACTIONS = (
    select(t.record_events.c.run_id, t.record_events.c.at, t.record_events.c.reason)
    .where(t.record_events.c.cause == RETRACTED)
    .order_by(t.record_events.c.seq.desc())
)
_RETRACTIONS_OF = _RETRACTIONS.where(t.record_events.c.run_id.in_(bindparam("run_ids")))
_RETRACTED_IDS = select(t.record_events.c.run_id).where(t.record_events.c.cause == RETRACTED)
_SUPERSEDED_IDS = select(t.runs.c.supersedes_id).where(t.runs.c.supersedes_id.is_not(None))
_SUCCESSORS = (
    select(t.runs.c.supersedes_id, t.runs.c.id, t.runs.c.run_digest)
    .where(t.runs.c.supersedes_id.in_(bindparam("run_ids")))
    .order_by(t.runs.c.seq)
)


def retractions(conn: Connection, run_ids: Iterable[str] | None = None) -> dict[str, Retraction]:
    """Run id -> its (first) retraction, for the given runs or for every retracted run."""
    if run_ids is None:
        rows = conn.execute(_RETRACTIONS)
    else:
        rows = conn.execute(_RETRACTIONS_OF, {"run_ids": sorted(set(run_ids))})
    return {row.run_id: Retraction(row.at, row.reason) for row in rows}


def retracted_by_event(conn: Connection) -> set[str]:
    """Ids of runs retracted by a ``retracted`` event (few: read whole; the runs table is not scanned)."""
    return set(conn.scalars(_RETRACTED_IDS))


def is_retracted(conn: Connection, run_id: str) -> bool:
    """The one question "is this run retracted?"."""
    return run_id in retractions(conn, [run_id])


def superseded_ids(conn: Connection) -> set[str]:
    """Ids of runs a later run supersedes (few; read whole rather than as a long IN list)."""
    return set(conn.scalars(_SUPERSEDED_IDS))


def run_facts(conn: Connection, run_ids: Iterable[str]) -> dict[str, RunFacts]:
    """Retraction and successor of each run in ``run_ids``."""
    ids = sorted(set(run_ids))
    found = retractions(conn, ids)
    successors = {row.supersedes_id: row for row in conn.execute(_SUCCESSORS, {"run_ids": ids})}
    return {
        run_id: RunFacts(
            run_id,
            found.get(run_id),
            successors[run_id].id if run_id in successors else None,
            successors[run_id].run_digest if run_id in successors else None,
        )
        for run_id in ids
    }


def facts_of_run(conn: Connection, run_id: str) -> RunFacts:
    return run_facts(conn, [run_id])[run_id]
