"""Who led each comparison group over time.

A group's leader is its best-ranked run (ties keep the earlier observation). The timeline replays
arrivals (``observed_at``) and retractions (``retracted_at``) in time order; every change of
leader is an event, the same shape as the catalog's ``record_events`` rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernelindex.ranking.cohort import POLICY_VERSION, RankInput, exclusion_reasons, order_key
from kernelindex.ranking.direction import metric_direction

NEW_RUN = "new_run"
RETRACTION = "retraction"


@dataclass(frozen=True)
class LeaderEvent:
    comparison_key: str
    run_id: str | None
    previous_run_id: str | None
    cause: str
    at: str
    policy_version: str = POLICY_VERSION


def leader_timeline(runs: Sequence[RankInput], retracted_at: dict[str, str] | None = None) -> list[LeaderEvent]:
    """Leader changes of one group, oldest first.

    ``runs`` may include retracted runs: they lead until ``retracted_at[run_id]`` (when known).
    Runs excluded for other reasons never lead.
    """
    retracted_at = retracted_at or {}
    eligible = [r for r in runs if not (set(exclusion_reasons(r)) - {"retracted"})]
    if not eligible:
        return []
    key = eligible[0].comparison_key
    direction = metric_direction(eligible[0].metric, eligible[0].unit)
    moments: list[tuple[str, int, RankInput]] = []
    for run in eligible:
        moments.append((run.observed_at or "", 0, run))
        if run.retracted and run.run_id in retracted_at:
            moments.append((retracted_at[run.run_id], 1, run))
        elif run.retracted:
            moments.append((run.observed_at or "", 1, run))
    moments.sort(key=lambda m: (m[0], m[1], m[2].run_id))
    live: dict[str, RankInput] = {}
    leader: RankInput | None = None
    events: list[LeaderEvent] = []
    for at, kind, run in moments:
        if kind == 0:
            live[run.run_id] = run
        else:
            live.pop(run.run_id, None)
        best = min(live.values(), key=lambda r: order_key(r, direction), default=None)
        if (best and best.run_id) != (leader and leader.run_id):
            cause = NEW_RUN if kind == 0 else RETRACTION
            events.append(LeaderEvent(key, best.run_id if best else None, leader.run_id if leader else None, cause, at))
            leader = best
    return events


def next_leader_event(last_recorded_leader: str | None, runs: Sequence[RankInput], now: str) -> LeaderEvent | None:
    """The event to append when the current leader differs from the last one recorded.

    The cause is ``retraction`` when the recorded leader can no longer lead (retracted, superseded,
    failed); otherwise a better run arrived: ``new_run``.
    """
    timeline = leader_timeline(runs)
    current = timeline[-1].run_id if timeline else None
    if current == last_recorded_leader or not runs:
        return None
    previous = next((r for r in runs if r.run_id == last_recorded_leader), None)
    cause = RETRACTION if previous is not None and exclusion_reasons(previous) else NEW_RUN
    return LeaderEvent(runs[0].comparison_key, current, last_recorded_leader, cause, now)
