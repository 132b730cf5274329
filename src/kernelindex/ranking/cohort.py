"""Ranking within a comparison group (a cohort): the one function every reader calls.

Pages, the JSON API and the CLI all rank through :func:`rank_group`, so they never disagree.
Rules: runs are ranked only against runs with the same comparison key; runs that are not passed,
retracted, superseded, flagged by the harness or lack a primary metric are listed apart with reason codes; ranks are dense;
two runs tie when their values are equal or, where raw samples give a bootstrap interval, when
their intervals overlap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kernelindex.ranking.bootstrap import Interval, bootstrap_interval, seed_for
from kernelindex.ranking.direction import Direction, direction_phrase, metric_direction
from kernelindex.records.vocabulary import RunStatus

POLICY_VERSION = "kernelindex-ranking-v1"

# Reason codes for runs kept out of a ranking, in the order they are reported.
RETRACTED = "retracted"
SUPERSEDED = "superseded"
NOT_PASSED = "not_passed"
NO_PRIMARY_METRIC = "no_primary_metric"
FLAGGED = "flagged"

REASON_TEXT = {
    RETRACTED: "retracted by its source or this index",
    SUPERSEDED: "superseded by a newer run",
    NOT_PASSED: "did not pass correctness",
    NO_PRIMARY_METRIC: "has no primary metric value",
    FLAGGED: "flagged by the harness (unstable spread, below speed of light or implausible speedup): kept, not ranked",
}

TIE_EQUAL = "equal values"
TIE_OVERLAP = "overlapping 95% bootstrap intervals"


@dataclass(frozen=True, slots=True)
class RankInput:
    """What ranking needs to know about one run; plain data, no store types."""

    run_id: str
    comparison_key: str
    status: str
    value: float | None
    metric: str | None = None
    statistic: str | None = None
    unit: str | None = None
    observed_at: str | None = None
    retracted: bool = False
    superseded: bool = False
    samples: tuple[float, ...] | None = None
    digest: str | None = None
    flags: tuple[str, ...] = ()  # the harness's flags from the run's raw samples (unstable, ...)


@dataclass(frozen=True, slots=True)
class RankedEntry:
    run: RankInput
    rank: int
    interval: Interval | None
    tied: bool


@dataclass(frozen=True)
class Exclusion:
    run: RankInput
    reasons: tuple[str, ...]


@dataclass
class RankedGroup:
    comparison_key: str
    metric: str | None
    statistic: str | None
    unit: str | None
    direction: Direction
    entries: list[RankedEntry] = field(default_factory=list)
    excluded: list[Exclusion] = field(default_factory=list)

    @property
    def size(self) -> int:
        """How many runs are ranked (excluded runs do not count)."""
        return len(self.entries)

    @property
    def direction_text(self) -> str:
        return direction_phrase(self.metric, self.unit)

    @property
    def tie_rule(self) -> str:
        return TIE_OVERLAP if any(e.interval for e in self.entries) else TIE_EQUAL

    @property
    def leader(self) -> RankedEntry | None:
        return self.entries[0] if self.entries else None

    def entry(self, run_id: str) -> RankedEntry | None:
        return next((e for e in self.entries if e.run.run_id == run_id), None)

    def exclusion(self, run_id: str) -> Exclusion | None:
        return next((x for x in self.excluded if x.run.run_id == run_id), None)


def exclusion_reasons(run: RankInput) -> tuple[str, ...]:
    reasons = []
    if run.retracted:
        reasons.append(RETRACTED)
    if run.superseded:
        reasons.append(SUPERSEDED)
    if run.status != RunStatus.PASSED:
        reasons.append(NOT_PASSED)
    if run.value is None or not run.metric:
        reasons.append(NO_PRIMARY_METRIC)
    if run.flags:
        reasons.append(FLAGGED)
    return tuple(reasons)


def order_key(run: RankInput, direction: Direction) -> tuple:
    """Best first; equal values keep the earlier observation (it got there first), then the id."""
    value = run.value if direction == Direction.LOWER else -run.value  # type: ignore[operator]
    return (value, run.observed_at or "", run.run_id)


def run_interval(run: RankInput) -> Interval | None:
    if not run.samples or not run.statistic:
        return None
    return bootstrap_interval(run.samples, run.statistic, seed=seed_for(run.digest or run.run_id))


def _span(entry_value: float, interval: Interval | None) -> tuple[float, float]:
    return (interval.low, interval.high) if interval else (entry_value, entry_value)


def rank_group(runs: Sequence[RankInput]) -> RankedGroup:
    """Rank runs that share one comparison key."""
    keys = {r.comparison_key for r in runs}
    if len(keys) > 1:
        raise ValueError(f"rank_group got runs from {len(keys)} comparison groups; group them first")
    reasons = {r.run_id: exclusion_reasons(r) for r in runs}
    ranked = [r for r in runs if not reasons[r.run_id]]
    sample = ranked[0] if ranked else (runs[0] if runs else None)
    metric = sample.metric if sample else None
    unit = sample.unit if sample else None
    direction = metric_direction(metric, unit)
    group = RankedGroup(
        comparison_key=next(iter(keys), ""),
        metric=metric,
        statistic=sample.statistic if sample else None,
        unit=unit,
        direction=direction,
        excluded=[Exclusion(r, reasons[r.run_id]) for r in runs if reasons[r.run_id]],
    )
    ranked.sort(key=lambda r: order_key(r, direction))
    rank = 0
    head_span: tuple[float, float] | None = None
    tiers: list[tuple[RankInput, int, Interval | None]] = []
    for run in ranked:
        interval = run_interval(run)
        span = _span(run.value, interval)  # type: ignore[arg-type]
        if head_span is None or not (span[0] <= head_span[1] and head_span[0] <= span[1]):
            rank += 1
            head_span = span
        tiers.append((run, rank, interval))
    counts: dict[int, int] = defaultdict(int)
    for _, r, _ in tiers:
        counts[r] += 1
    group.entries = [RankedEntry(run, r, interval, counts[r] > 1) for run, r, interval in tiers]
    return group


def rank_groups(runs: Iterable[RankInput]) -> dict[str, RankedGroup]:
    """Group runs by comparison key and rank each group."""
    by_key: dict[str, list[RankInput]] = defaultdict(list)
    for run in runs:
        by_key[run.comparison_key].append(run)
    return {key: rank_group(group) for key, group in by_key.items()}
