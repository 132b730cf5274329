"""Recording an evaluation (a controlled rerun) as verified runs, signed, with the leader changes it causes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from kernelindex.harness.records import evaluation_records
from kernelindex.ingest.evaluations import StoredEvaluation, store_evaluation
from kernelindex.ranking.history import LeaderEvent
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.records.vocabulary import EvidenceLevel
from kernelindex.store.database import Store


@dataclass(frozen=True)
class RecordedEvaluation:
    stored: StoredEvaluation
    leader_events: list[LeaderEvent]
    level: str  # "verified", or why the runs are only reproducible (no sandbox)

    @property
    def new_runs(self) -> int:
        return self.stored.new_runs


def record_evaluation(
    store: Store, suite: Any, *, private_key: Any = None, runner_id: str | None = None, runner_host: str | None = None
) -> RecordedEvaluation:
    """The records (built purely by the harness), the runner's signatures over the runs and the
    leader events, in one transaction."""
    records = evaluation_records(suite)
    overrides: dict[str, Any] = {
        k: v for k, v in (("runner_id", runner_id), ("runner_host", runner_host)) if v is not None
    }
    if overrides:
        records = dataclasses.replace(records, **overrides)
    with store.begin() as conn:
        stored = store_evaluation(conn, records, private_key)
        leaders = record_leader_changes(conn)
    level = (
        EvidenceLevel.VERIFIED.value
        if suite.sandboxed
        else f"{EvidenceLevel.REPRODUCIBLE}, not verified: no sandbox ({suite.sandbox_note})"
    )
    return RecordedEvaluation(stored, leaders, level)
