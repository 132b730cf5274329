"""Recording an evaluation (a controlled rerun) as verified runs, signed, with the leader changes it causes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelindex.harness.records import StoredEvaluation
from kernelindex.harness.records import record_evaluation as store_records
from kernelindex.ranking.history import LeaderEvent
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.store.database import JoinedStore, Store


@dataclass(frozen=True)
class RecordedEvaluation:
    stored: StoredEvaluation
    leader_events: list[LeaderEvent]

    @property
    def new_runs(self) -> int:
        return sum(1 for run_id in self.stored.run_ids.values() if run_id)


def record_evaluation(store: Store, suite: Any, *, private_key: Any = None, runner_id: str | None = None,
                      runner_host: str | None = None) -> RecordedEvaluation:
    """The records, the runner's signatures over the runs and the leader events, in one transaction."""
    with store.begin() as conn:
        stored = store_records(JoinedStore(conn), suite, private_key=private_key, runner_id=runner_id,
                               runner_host=runner_host)
        return RecordedEvaluation(stored, record_leader_changes(conn))
