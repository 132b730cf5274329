"""Appending leader-change events to the store's ``record_events`` (never editing old ones).

Called after runs are added (``kernelindex rank --record-leaders``); pages only read the events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kernelindex.ranking.history import LeaderEvent, next_leader_event
from kernelindex.ranking.reads import rank_inputs
from kernelindex.store.ids import uuid7
from kernelindex.store.reads.ranking import all_comparison_keys, last_recorded_leaders
from kernelindex.store.writer import Writer, now_iso

if TYPE_CHECKING:
    from sqlalchemy import Connection


def record_leader_changes(
    conn: Connection, keys: Iterable[str] | None = None, now: str | None = None
) -> list[LeaderEvent]:
    """Append one event per group whose current leader differs from its last recorded one."""
    if keys is None:
        keys = all_comparison_keys(conn)
    keys = sorted(set(keys))
    recorded = last_recorded_leaders(conn, keys)
    by_key: dict[str, list] = {k: [] for k in keys}
    for run in rank_inputs(conn, keys):
        by_key[run.comparison_key].append(run)
    now = now or now_iso()
    events = []
    for key, group in by_key.items():
        event = next_leader_event(recorded.get(key), group, now)
        if event is not None and not (key not in recorded and event.run_id is None):
            events.append(event)
    writer = Writer(conn)
    for e in events:
        event_id = uuid7()
        row = {
            "id": event_id,
            "comparisonKey": e.comparison_key,
            "runId": e.run_id,
            "previousRunId": e.previous_run_id,
            "policyVersion": e.policy_version,
            "cause": e.cause,
            "at": e.at,
            "createdAt": e.at,
        }
        writer.add(
            "record_events",
            None,
            {
                "id": event_id,
                "comparison_key": e.comparison_key,
                "run_id": e.run_id,
                "previous_run_id": e.previous_run_id,
                "policy_version": e.policy_version,
                "cause": e.cause,
                "reason": None,
                "at": e.at,
                "created_at": e.at,
                "export_row": row,
            },
        )
    writer.flush()
    return events
