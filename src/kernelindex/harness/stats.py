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
    """Seeded bootstrap so the same samples always give the same interval."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        raise ValueError("no samples to summarize")
    median = float(np.median(x))
    rng = np.random.default_rng(seed)
    boots = np.median(x[rng.integers(0, x.size, size=(resamples, x.size))], axis=1)
    low, high = np.percentile(boots, [2.5, 97.5])
    return Summary(
        count=int(x.size), median=median, mean=float(x.mean()),
        p05=float(np.percentile(x, 5)), p95=float(np.percentile(x, 95)),
        min=float(x.min()), max=float(x.max()), mad=float(np.median(np.abs(x - median))),
        ci95_low=float(low), ci95_high=float(high),
    )
