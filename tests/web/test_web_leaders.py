"""Leader events in the store: appended once per change of leader, never edited, and shown by `rank`."""

from __future__ import annotations

import copy
import random

from sqlalchemy import select
from typer.testing import CliRunner
from web_storefill import fill

from kernelindex.cli import app as cli_app
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.store.database import open_store
from kernelindex.store.tables import record_events, runs
from kernelindex.store.writer import Writer


def test_leader_events_follow_new_runs_and_retractions(tmp_path):
    store = open_store(str(tmp_path / "leaders.db"))
    filled = fill(store, random.randrange(2**32))
    with store.begin() as conn:
        assert record_leader_changes(conn, now="2026-05-01T00:00:00Z") == []  # nothing changed since fill
        fast = conn.execute(
            select(runs.c.manifest, runs.c.comparison_key).where(runs.c.id == filled.runs["fast"])
        ).one()
        bundle = copy.deepcopy(fast.manifest)
        spec = bundle["run"]["spec"]
        spec["timing"] = {"primaryStatistic": "median", "latencyNs": {"median": 1000}}
        spec.pop("evidence")
        spec["sourceNative"]["externalId"] = "faster"
        spec["observedAt"] = "2026-05-02T00:00:00Z"
        writer = Writer(conn)
        faster = writer.add_run_bundle(bundle)
        [event] = record_leader_changes(conn, now="2026-05-03T00:00:00Z")
        assert (event.run_id, event.previous_run_id, event.cause) == (faster, filled.runs["fast"], "new_run")
        writer.retract_run(faster, "timer bug")
        [back] = record_leader_changes(conn, now="2026-05-04T00:00:00Z")
        assert (back.run_id, back.previous_run_id, back.cause) == (filled.runs["fast"], faster, "retraction")
        stored = conn.execute(
            select(record_events.c.run_id, record_events.c.cause)
            .where(record_events.c.comparison_key == fast.comparison_key)
            .order_by(record_events.c.seq)
        ).all()
    assert [tuple(r) for r in stored][-3:] == [
        (faster, "new_run"),
        (faster, "retracted"),
        (filled.runs["fast"], "retraction"),
    ]
    result = CliRunner().invoke(cli_app, ["rank", "nope", "--db", str(store.engine.url)])
    assert result.exit_code == 1 and "no comparison key, workload, operation or run named 'nope'" in result.output
    result = CliRunner().invoke(cli_app, ["rank", filled.workload_id, "--db", str(store.engine.url)])
    assert result.exit_code == 0 and "lower latency is better" in result.output and "not_passed" in result.output
    store.close()
