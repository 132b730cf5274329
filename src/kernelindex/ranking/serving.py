"""Ranking serving runs inside a cohort, and the throughput/latency Pareto frontier of a resolver answer.

Serving runs compare only inside one cohort key (:mod:`kernelindex.records.serving_keys`). A
cohort is ranked on one metric with the direction the site's vocabulary gives it (throughput:
higher is better; latencies and error rate: lower), dense ranks, equal values tie. Runs that are
not ``valid``, are retracted, or lack the metric are listed apart with the reason, never dropped.

The resolver compares across cohorts of one model on one GPU product, so it normalises
throughput per accelerator and puts it against a latency: a measured percentile when the run has
one, else the bound the workload's SLO declares (the harness enforced at least that), else none
(an offline run: no latency limit). A run with no latency counts as unbounded latency: it is on
the frontier only if nothing has more throughput per GPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelindex.records.serving_keys import serving_direction
from kernelindex.records.vocabulary import Direction, ServingStatus

LATENCY_METRICS = ("tpot_ms", "ttft_ms", "e2e_latency_ms", "itl_ms")
THROUGHPUT_METRICS = ("output_token_throughput_tps", "token_throughput_tps", "goodput")


@dataclass(frozen=True)
class ServingRanked:
    run_id: str
    rank: int | None
    value: float | None
    tied: bool = False
    reasons: tuple[str, ...] = ()


def rank_serving_cohort(runs: Sequence[Mapping[str, Any]], metric: str, statistic: str) -> list[ServingRanked]:
    """Ranked entries first (best first), then the excluded with their reasons.

    Each run mapping holds ``id``, ``status``, ``retracted_at`` and ``measurements``
    (``[{metric, statistic, value}]``)."""
    direction = serving_direction(metric)
    ranked: list[tuple[str, float]] = []
    excluded: list[ServingRanked] = []
    for run in runs:
        value = next(
            (m["value"] for m in run["measurements"] if m["metric"] == metric and m["statistic"] == statistic), None
        )
        reasons = []
        if run.get("retracted_at"):
            reasons.append("retracted")
        if run["status"] != ServingStatus.VALID:
            reasons.append(f"status {run['status']}")
        if value is None:
            reasons.append(f"no {metric}:{statistic}")
        if direction is None:
            reasons.append(f"{metric} has no known direction")
        if reasons or value is None:  # (no value always has its reason)
            excluded.append(ServingRanked(run["id"], None, value, reasons=tuple(reasons)))
        else:
            ranked.append((run["id"], float(value)))
    ranked.sort(key=lambda item: -item[1] if direction == Direction.HIGHER else item[1])
    counts: dict[float, int] = {}
    for _, value in ranked:
        counts[value] = counts.get(value, 0) + 1
    out, rank, previous = [], 0, None
    for run_id, value in ranked:
        if value != previous:
            rank += 1
            previous = value
        out.append(ServingRanked(run_id, rank, value, tied=counts[value] > 1))
    return out + excluded


@dataclass(frozen=True)
class Latency:
    metric: str
    statistic: str
    value: float
    state: str  # "measured" or "declared" (an SLO bound the workload states)


def run_latency(
    measurements: Sequence[Mapping[str, Any]], slo: Sequence[Mapping[str, Any]] | None, statistic: str = "p99"
) -> Latency | None:
    """The latency a run is placed at: measured at ``statistic`` if it has one, else a declared bound."""
    for metric in LATENCY_METRICS:
        for m in measurements:
            if m["metric"] == metric and m["statistic"] == statistic:
                return Latency(metric, statistic, float(m["value"]), "measured")
    for metric in LATENCY_METRICS:
        for bound in slo or ():
            if bound["metric"] == metric and bound["statistic"] == statistic:
                return Latency(metric, statistic, float(bound["value"]), "declared")
    return None


def run_throughput(measurements: Sequence[Mapping[str, Any]]) -> tuple[str, str, float] | None:
    """``(metric, statistic, value)`` of the run's throughput, by the vocabulary's preference."""
    for metric in THROUGHPUT_METRICS:
        for m in measurements:
            if m["metric"] == metric:
                return metric, m["statistic"], float(m["value"])
    return None


@dataclass
class FrontierPoint:
    run_id: str
    per_gpu: float
    latency: Latency | None
    on_frontier: bool = False
    dominated_by: str | None = None  # a run with at least as much throughput per GPU at no more latency


def _latency(point: FrontierPoint) -> float:
    return point.latency.value if point.latency else float("inf")


def pareto_frontier(points: list[FrontierPoint]) -> list[FrontierPoint]:
    """Mark the non-dominated points (more throughput per GPU, less latency) in one sweep by latency;
    a point with no latency has unbounded latency. Returns frontier points first, by latency."""
    best: FrontierPoint | None = None
    for point in sorted(points, key=lambda p: (_latency(p), -p.per_gpu)):
        if best is None or point.per_gpu > best.per_gpu:
            point.on_frontier, best = True, point
        elif point.per_gpu == best.per_gpu and _latency(point) == _latency(best):
            point.on_frontier = True  # the same point twice: neither dominates
        else:
            point.on_frontier, point.dominated_by = False, best.run_id
    return sorted(points, key=lambda p: (not p.on_frontier, _latency(p), -p.per_gpu))
