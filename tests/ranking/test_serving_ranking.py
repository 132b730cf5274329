"""Serving cohorts rank by the metric's direction with dense ties; the resolver's frontier sweep
agrees with a brute-force dominance check on random points."""

from __future__ import annotations

import random

from kernelindex.ranking.serving import FrontierPoint, Latency, pareto_frontier, rank_serving_cohort, run_latency


def _run(run_id, value, metric="output_token_throughput_tps", status="valid", retracted=None):
    measurements = [] if value is None else [{"metric": metric, "statistic": "reported", "value": value}]
    return {"id": run_id, "status": status, "retracted_at": retracted, "measurements": measurements}


def test_throughput_ranks_highest_first_with_dense_ties_and_reasons_for_the_rest():
    runs = [
        _run("a", 10.0),
        _run("b", 30.0),
        _run("c", 30.0),
        _run("d", 20.0),
        _run("e", None),
        _run("f", 99.0, status="invalid"),
        _run("g", 99.0, retracted="2026-01-01T00:00:00Z"),
    ]
    ranked = rank_serving_cohort(runs, "output_token_throughput_tps", "reported")
    assert [(r.run_id, r.rank, r.tied) for r in ranked[:4]] == [
        ("b", 1, True),
        ("c", 1, True),
        ("d", 2, False),
        ("a", 3, False),
    ]
    reasons = {r.run_id: r.reasons for r in ranked[4:]}
    assert reasons == {"e": ("no output_token_throughput_tps:reported",), "f": ("status invalid",), "g": ("retracted",)}


def test_latency_ranks_lowest_first():
    runs = [_run("slow", 50.0, "tpot_ms"), _run("fast", 20.0, "tpot_ms")]
    assert [r.run_id for r in rank_serving_cohort(runs, "tpot_ms", "reported")] == ["fast", "slow"]


def test_a_measured_percentile_wins_over_a_declared_bound():
    slo = [{"metric": "tpot_ms", "statistic": "p99", "value": 40}]
    assert run_latency([], slo) == Latency("tpot_ms", "p99", 40.0, "declared")
    measured = [{"metric": "tpot_ms", "statistic": "p99", "value": 31.5}]
    assert run_latency(measured, slo) == Latency("tpot_ms", "p99", 31.5, "measured")
    assert run_latency([], None) is None


def test_frontier_sweep_matches_brute_force_dominance():
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    for _ in range(200):
        points = []
        for i in range(rng.randrange(1, 25)):
            latency = (
                None
                if rng.random() < 0.2
                else Latency("tpot_ms", "p99", float(rng.choice([20, 40, 60, 200])), "declared")
            )
            points.append(FrontierPoint(f"r{i}", float(rng.randrange(1, 8)), latency))

        def lat(p):
            return p.latency.value if p.latency else float("inf")

        expected = {
            p.run_id
            for p in points
            if not any(
                o is not p
                and o.per_gpu >= p.per_gpu
                and lat(o) <= lat(p)
                and (o.per_gpu > p.per_gpu or lat(o) < lat(p))
                for o in points
            )
        }
        result = pareto_frontier(points)
        assert {p.run_id for p in result if p.on_frontier} == expected, seed
        for p in result:
            if p.dominated_by:
                other = next(o for o in points if o.run_id == p.dominated_by)
                assert other.per_gpu >= p.per_gpu and lat(other) <= lat(p), seed
