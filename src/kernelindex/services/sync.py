"""Syncing from another index's server (``kernelindex sync URL``) with the leader changes it causes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelindex.ingest.sync import SyncResult, sync
from kernelindex.ranking.history import LeaderEvent
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.store.database import Store


@dataclass(frozen=True)
class Synced:
    result: SyncResult
    leader_events: list[LeaderEvent] = field(default_factory=list)


def sync_catalog(store: Store, url: str, **limits: Any) -> Synced:
    """What is new at ``url``, and the leader changes it causes, in one transaction: all stored, or
    (on a refused sync, raised as ``SyncFailed`` or ``ImportFailed``) nothing. ``limits``: those of
    :func:`kernelindex.ingest.sync.sync` (``timeout``, ``max_bytes``, ``deadline``)."""
    events: list[LeaderEvent] = []
    result = sync(store, url, **limits, after_import=lambda conn: events.extend(record_leader_changes(conn)))
    return Synced(result, events)
