"""Which way is better for a metric: ranking needs it, and every page says it out loud."""

from __future__ import annotations

from kernelindex.records.vocabulary import Direction

TIME_UNITS = frozenset({"ns", "us", "µs", "ms", "s", "cycles"})

# Metrics where a bigger number wins. Time-like metrics (latency, the KernelBot "score", which is
# a time in seconds) and anything measured in a time unit win when smaller.
HIGHER_IS_BETTER = frozenset(
    {"throughput", "tflops", "gflops", "bandwidth", "speedup", "sol_score", "tokens_per_second", "flops"}
)
LOWER_IS_BETTER = frozenset({"latency", "time", "duration", "score", "runtime"})


def metric_direction(metric: str | None, unit: str | None = None) -> Direction:
    """``lower`` or ``higher``: the direction in which ``metric`` improves."""
    name = (metric or "").lower()
    if name in HIGHER_IS_BETTER:
        return Direction.HIGHER
    if name in LOWER_IS_BETTER or (unit or "") in TIME_UNITS:
        return Direction.LOWER
    return Direction.LOWER


def direction_phrase(metric: str | None, unit: str | None = None) -> str:
    """The sentence shown beside a ranking, e.g. ``lower latency is better``."""
    direction = metric_direction(metric, unit)
    return f"{direction.value} {metric or 'value'} is better"
