"""Appending the leader events every comparison group is owed (``kernelindex rank --record-leaders``)."""

from __future__ import annotations

from kernelindex.ranking.history import LeaderEvent
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.store.database import Store


def record_leaders(store: Store) -> list[LeaderEvent]:
    with store.begin() as conn:
        return record_leader_changes(conn)
