"""Ranking rules: exclusions with reasons, dense ranks, ties on equal values or overlapping intervals."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kernelindex.ranking.bootstrap import RESAMPLES, bootstrap_interval, seed_for
from kernelindex.ranking.cohort import (
    NO_PRIMARY_METRIC,
    NOT_PASSED,
    RETRACTED,
    SUPERSEDED,
    RankInput,
    rank_group,
    rank_groups,
)
from kernelindex.ranking.direction import direction_phrase, metric_direction


def run(run_id, value, key="k", status="passed", metric="latency", **kw):
    return RankInput(
        run_id=run_id,
        comparison_key=key,
        status=status,
        value=value,
        metric=metric,
        statistic=kw.pop("statistic", "mean"),
        unit=kw.pop("unit", "ns"),
        **kw,
    )


def test_dense_ranks_and_equal_values_tie():
    group = rank_group([run("a", 30), run("b", 10), run("c", 20), run("d", 20), run("e", 40)])
    assert [(e.run.run_id, e.rank, e.tied) for e in group.entries] == [
        ("b", 1, False),
        ("c", 2, True),
        ("d", 2, True),
        ("a", 3, False),
        ("e", 4, False),
    ]
    assert group.size == 5 and group.leader.run.run_id == "b"
    assert group.tie_rule == "equal values"
    assert group.direction_text == "lower latency is better"


def test_higher_is_better_metric_reverses_order():
    group = rank_group([run("a", 1.5, metric="speedup", unit="x"), run("b", 3.0, metric="speedup", unit="x")])
    assert [e.run.run_id for e in group.entries] == ["b", "a"]
    assert metric_direction("tflops") == "higher" and metric_direction("score", "s") == "lower"
    assert direction_phrase("throughput") == "higher throughput is better"


def test_exclusions_carry_every_reason_code():
    group = rank_group(
        [
            run("ok", 5),
            run("bad", 1, status="incorrect_numerical"),
            run("gone", 1, retracted=True),
            run("old", 2, superseded=True),
            run("none", None),
            run("worst", None, status="timeout", retracted=True),
        ]
    )
    assert [e.run.run_id for e in group.entries] == ["ok"]
    reasons = {x.run.run_id: x.reasons for x in group.excluded}
    assert reasons == {
        "bad": (NOT_PASSED,),
        "gone": (RETRACTED,),
        "old": (SUPERSEDED,),
        "none": (NO_PRIMARY_METRIC,),
        "worst": (RETRACTED, NOT_PASSED, NO_PRIMARY_METRIC),
    }
    assert group.entry("bad") is None and group.exclusion("bad").reasons == (NOT_PASSED,)


def test_equal_values_tie_earlier_observation_listed_first():
    group = rank_group(
        [run("late", 7, observed_at="2026-02-01T00:00:00Z"), run("early", 7, observed_at="2026-01-01T00:00:00Z")]
    )
    assert [(e.run.run_id, e.rank) for e in group.entries] == [("early", 1), ("late", 1)]


def test_groups_are_never_mixed():
    groups = rank_groups([run("a", 1, key="x"), run("b", 2, key="y"), run("c", 3, key="x")])
    assert {k: [e.run.run_id for e in g.entries] for k, g in groups.items()} == {"x": ["a", "c"], "y": ["b"]}
    with pytest.raises(ValueError, match="comparison groups"):
        rank_group([run("a", 1, key="x"), run("b", 2, key="y")])


def test_overlapping_intervals_tie_and_separated_ones_do_not():
    seed = random.randrange(2**32)
    print("sample seed", seed)
    rng = np.random.default_rng(seed)
    noisy_a = tuple(rng.normal(100.0, 5.0, 50))
    noisy_b = tuple(x + 0.2 for x in noisy_a)  # shifted far less than the noise: must tie
    far = tuple(x + 100.0 for x in noisy_a)  # shifted by 20 standard deviations: must not
    runs = [run(name, float(np.mean(s)), samples=s) for name, s in (("a", noisy_a), ("b", noisy_b), ("far", far))]
    group = rank_group(runs)
    ranks = {e.run.run_id: e.rank for e in group.entries}
    assert ranks["a"] == ranks["b"] == 1 and ranks["far"] == 2
    assert group.tie_rule.startswith("overlapping")
    for e in group.entries:
        assert e.interval.low <= e.run.value <= e.interval.high
        assert e.interval.resamples == RESAMPLES and e.interval.seed == seed_for(e.run.run_id)


def test_bootstrap_is_seeded_and_covers_the_estimate():
    samples = np.random.default_rng(7).lognormal(3.0, 0.2, 40)
    one = bootstrap_interval(samples, "median", seed=11)
    two = bootstrap_interval(samples, "median", seed=11)
    other = bootstrap_interval(samples, "median", seed=12)
    assert one == two and one != other
    assert one.low < float(np.median(samples)) < one.high
    assert bootstrap_interval(samples, "geomean", seed=1).estimate == pytest.approx(np.exp(np.log(samples).mean()))
    assert bootstrap_interval([1.0], "mean", seed=1) is None  # too few samples
    assert bootstrap_interval(samples, "unspecified", seed=1) is None  # unknown statistic: no interval
