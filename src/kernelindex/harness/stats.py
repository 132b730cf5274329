"""Summary statistics of timing samples: spread and uncertainty, not just a median."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    count: int
    median: float
    mean: float
    p05: float
    p95: float
    min: float
    max: float
    mad: float  # median absolute deviation from the median, unscaled
    ci95_low: float  # bootstrap 95% interval of the median
    ci95_high: float

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(samples, resamples: int = 2000, seed: int = 0) -> Summary:
    """Seeded bootstrap so the same samples always give the same interval, in whatever order they
    were taken (they are sorted first: resampling draws by position)."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    if x.size == 0:
        raise ValueError("no samples to summarize")
    median = float(np.median(x))
    rng = np.random.default_rng(seed)
    boots = np.median(x[rng.integers(0, x.size, size=(resamples, x.size))], axis=1)
    low, high = np.percentile(boots, [2.5, 97.5])
    return Summary(
        count=int(x.size),
        median=median,
        mean=float(x.mean()),
        p05=float(np.percentile(x, 5)),
        p95=float(np.percentile(x, 95)),
        min=float(x.min()),
        max=float(x.max()),
        mad=float(np.median(np.abs(x - median))),
        ci95_low=float(low),
        ci95_high=float(high),
    )


# A case is UNSTABLE (kept, shown, not ranked) when its figure is too uncertain to rank:
UNSTABLE_INTERVAL = 0.5  # the speedup's 95% interval is wider than half its value (beyond ±25%)
UNSTABLE_SPREAD = 4.0  # or p95 / p05 of the solution's or the reference's per-call times exceeds 4
IMPLAUSIBLE_SPEEDUP = 1000.0  # a speedup over 1,000× is kept but not ranked until a maintainer looks


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    @property
    def relative_width(self) -> float:
        return (self.high - self.low) / self.value if self.value > 0 else float("inf")

    def to_dict(self) -> dict:
        return asdict(self)


def _pair_ratios(reference: list[list[int]], solution: list[list[int]]) -> np.ndarray:
    return np.array(
        [
            np.median(r) / np.median(s)
            for r, s in zip(reference, solution)
            if len(r) and len(s) and np.median(s) > 0 and np.median(r) > 0
        ]
    )


def speedup_interval(
    reference: list[list[int]], solution: list[list[int]], resamples: int = 2000, seed: int = 0
) -> Interval | None:
    """Bootstrap 95% interval of the speedup from paired rounds: each round's reference median over
    its solution median, pairs resampled whole (the pairing is what cancels machine drift)."""
    ratios = _pair_ratios(reference, solution)
    if ratios.size == 0:
        return None
    rng = np.random.default_rng(seed)
    boots = np.median(ratios[rng.integers(0, ratios.size, size=(resamples, ratios.size))], axis=1)
    low, high = np.percentile(boots, [2.5, 97.5])
    return Interval(float(np.median(ratios)), float(low), float(high))


def suite_speedup_interval(
    cases: list[tuple[list[list[int]], list[list[int]]]], resamples: int = 2000, seed: int = 0
) -> Interval | None:
    """Interval of the geometric-mean speedup over cases, resampling each case's pairs."""
    per_case = [_pair_ratios(r, s) for r, s in cases]
    per_case = [r for r in per_case if r.size]
    if not per_case:
        return None
    rng = np.random.default_rng(seed)
    logs = np.zeros(resamples)
    for ratios in per_case:
        logs += np.log(np.median(ratios[rng.integers(0, ratios.size, size=(resamples, ratios.size))], axis=1))
    boots = np.exp(logs / len(per_case))
    value = float(np.exp(np.mean([np.log(np.median(r)) for r in per_case])))
    low, high = np.percentile(boots, [2.5, 97.5])
    return Interval(value, float(low), float(high))


def spread(summary: Summary) -> float:
    return summary.p95 / summary.p05 if summary.p05 > 0 else float("inf")
