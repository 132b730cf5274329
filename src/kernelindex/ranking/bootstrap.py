"""Bootstrap confidence intervals for a run's primary statistic over its raw samples.

Seeded per run (from the run's digest or id) so a page, the API and the CLI all show the same
interval, and anyone can recompute it from the stated seed and resample count.
NumPy is imported on the first interval only: every web worker imports this module, most groups
have no raw samples, and NumPy is ~12 MiB of resident memory per process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

RESAMPLES = 2000
CONFIDENCE = 0.95
MIN_SAMPLES = 2


def _statistics(np: Any) -> dict[str, Callable[[Any, int], Any]]:
    """Each statistic by name, as a reduction along an axis with the NumPy module ``np``."""
    return {
        "mean": lambda a, axis: np.mean(a, axis=axis),
        "median": lambda a, axis: np.median(a, axis=axis),
        "min": lambda a, axis: np.min(a, axis=axis),
        "max": lambda a, axis: np.max(a, axis=axis),
        "p05": lambda a, axis: np.percentile(a, 5, axis=axis),
        "p95": lambda a, axis: np.percentile(a, 95, axis=axis),
        "geomean": lambda a, axis: np.exp(np.mean(np.log(a), axis=axis)),
    }


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    estimate: float
    statistic: str
    confidence: float
    resamples: int
    seed: int
    sample_count: int

    def as_dict(self) -> dict:
        return {
            "low": self.low,
            "high": self.high,
            "estimate": self.estimate,
            "statistic": self.statistic,
            "confidence": self.confidence,
            "method": "percentile bootstrap",
            "resamples": self.resamples,
            "seed": self.seed,
            "sampleCount": self.sample_count,
        }


def seed_for(identity: str) -> int:
    """A stable 63-bit seed from a run's digest (or id)."""
    return int.from_bytes(hashlib.sha256(identity.encode()).digest()[:8], "big") >> 1


def bootstrap_interval(
    samples: Sequence[float],
    statistic: str,
    *,
    seed: int,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Interval | None:
    """Percentile-bootstrap interval of ``statistic``; None when it cannot be computed."""
    import numpy as np

    fn = _statistics(np).get(statistic)
    data = np.asarray(samples, dtype=np.float64)
    if fn is None or data.size < MIN_SAMPLES or not np.all(np.isfinite(data)):
        return None
    if statistic == "geomean" and np.any(data <= 0):
        return None
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, data.size, size=(resamples, data.size))
    stats = fn(data[picks], 1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return Interval(
        low=float(low),
        high=float(high),
        estimate=float(fn(data, 0)),
        statistic=statistic,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        sample_count=int(data.size),
    )
