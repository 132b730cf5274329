"""Leader history: a new leader is an event; retractions hand the lead back."""

from __future__ import annotations

from kernelindex.ranking.cohort import RankInput
from kernelindex.ranking.history import NEW_RUN, RETRACTION, leader_timeline, next_leader_event


def run(run_id, value, at, **kw):
    return RankInput(
        run_id=run_id,
        comparison_key="k",
        status=kw.pop("status", "passed"),
        value=value,
        metric="latency",
        statistic="mean",
        unit="ns",
        observed_at=at,
        **kw,
    )


def test_each_new_leader_is_one_event():
    runs = [
        run("a", 50, "2026-01-01"),
        run("b", 60, "2026-01-02"),
        run("c", 40, "2026-01-03"),
        run("d", 40, "2026-01-04"),
        run("e", 10, "2026-01-05", status="incorrect_numerical"),
    ]
    events = leader_timeline(runs)
    assert [(e.run_id, e.previous_run_id, e.cause, e.at) for e in events] == [
        ("a", None, NEW_RUN, "2026-01-01"),
        ("c", "a", NEW_RUN, "2026-01-03"),
    ]


def test_retraction_returns_the_lead():
    runs = [run("a", 50, "2026-01-01"), run("b", 20, "2026-01-02", retracted=True)]
    events = leader_timeline(runs, retracted_at={"b": "2026-01-09"})
    assert [(e.run_id, e.previous_run_id, e.cause) for e in events] == [
        ("a", None, NEW_RUN),
        ("b", "a", NEW_RUN),
        ("a", "b", RETRACTION),
    ]


def test_next_event_only_when_leader_changed():
    runs = [run("a", 50, "2026-01-01"), run("c", 40, "2026-01-03")]
    assert next_leader_event("c", runs, "2026-02-01T00:00:00Z") is None
    event = next_leader_event("a", runs, "2026-02-01T00:00:00Z")
    assert (event.run_id, event.previous_run_id, event.at) == ("c", "a", "2026-02-01T00:00:00Z")


def test_a_lost_leader_gives_a_retraction_event():
    runs = [run("a", 50, "2026-01-01"), run("c", 40, "2026-01-03", retracted=True)]
    event = next_leader_event("c", runs, "2026-02-01T00:00:00Z")
    assert (event.run_id, event.previous_run_id, event.cause) == ("a", "c", RETRACTION)
    first = next_leader_event(None, runs, "2026-02-01T00:00:00Z")
    assert (first.run_id, first.previous_run_id, first.cause) == ("a", None, NEW_RUN)
