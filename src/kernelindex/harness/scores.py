"""Per-case and per-suite scores, including the leaderboard's speed-of-light (SOL) score.

T_SOL and T_b come from the workload line when it gives them (for the hardware it names, if
it names one); otherwise T_SOL is derived from the definition's declared flops and bytes and the
peak rates of the GPU in the table below, and the baseline falls back to the reference as timed
in the same run.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

# Dense bf16 tensor-core FLOP/s and memory bandwidth in bytes/s, from the vendors' datasheets.
PEAKS = {
    "GB200": (2.5e15, 8.0e12),
    "B200": (2.25e15, 8.0e12),
    "H200": (989e12, 4.8e12),
    "H100 SXM": (989e12, 3.35e12),
    "H100 PCIe": (756e12, 2.0e12),
    "H100": (989e12, 3.35e12),
    "A100": (312e12, 2.039e12),
    "L40S": (362e12, 0.864e12),
}


def peaks_for(product: str) -> tuple[float, float] | None:
    for name, peaks in PEAKS.items():  # ordered most specific first within a family
        if name.lower() in product.lower():
            return peaks
    return None


def sol_score(t_k: float, t_sol: float, t_b: float) -> float:
    """S = 1 / (1 + (T_k − T_SOL) / (T_b − T_SOL)), clamped to [0, 1]: 0.5 at the baseline, 1 at SOL."""
    if t_b <= t_sol:
        return 1.0 if t_k <= t_sol else 0.0
    return min(1.0, max(0.0, 1.0 / (1.0 + (t_k - t_sol) / (t_b - t_sol))))


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


@dataclass
class CaseScore:
    latency_ms: float | None
    reference_latency_ms: float | None
    speedup: float | None  # reference / solution, same run
    baseline_ms: float | None  # T_b, or the reference when the workload gives none
    baseline_source: str  # "workload" | "reference"
    t_sol_ms: float | None
    sol: float | None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SuiteScore:
    cases: int
    passed: int
    geomean_latency_ms: float | None
    geomean_speedup: float | None  # over the scoring baseline
    geomean_speedup_vs_reference: float | None
    faster_than_baseline: int
    sol_score: float | None  # mean of per-case SOL scores (failed cases 0), when every case has T_SOL and T_b

    def to_dict(self) -> dict:
        return asdict(self)


def case_score(case, definition, axis_values: dict, passed: bool, latency_ms, reference_ms, product: str) -> CaseScore:
    given_applies = case.sol_hardware is None or case.sol_hardware.lower() in product.lower()
    t_b = case.t_b_ms if given_applies and case.t_b_ms else None
    t_sol = case.t_sol_ms if given_applies and case.t_sol_ms else None
    if t_sol is None and (definition.flops or definition.bytes):
        peaks = peaks_for(product)
        if peaks:
            from kernelindex.formats.axes import evaluate

            flops = float(evaluate(definition.flops, axis_values)) if definition.flops else 0.0
            moved = float(evaluate(definition.bytes, axis_values)) if definition.bytes else 0.0
            t_sol = max(flops / peaks[0], moved / peaks[1]) * 1e3
    baseline, source = (t_b, "workload") if t_b else (reference_ms, "reference")
    speedup = reference_ms / latency_ms if passed and latency_ms and reference_ms else None
    sol = None
    if t_sol is not None and baseline is not None:
        sol = sol_score(latency_ms, t_sol, baseline) if passed and latency_ms else 0.0
    return CaseScore(latency_ms if passed else None, reference_ms, speedup, baseline, source, t_sol, sol)


def suite_score(scores: list[CaseScore], passed: list[bool]) -> SuiteScore:
    ok = [(s, s.latency_ms) for s, p in zip(scores, passed) if p and s.latency_ms]  # (score, its latency)
    sols = [s.sol for s in scores if s.sol is not None]
    return SuiteScore(
        cases=len(scores),
        passed=sum(passed),
        geomean_latency_ms=geomean([latency for _, latency in ok]),
        geomean_speedup=geomean([s.baseline_ms / latency for s, latency in ok if s.baseline_ms]),
        geomean_speedup_vs_reference=geomean([s.speedup for s, _ in ok if s.speedup]),
        faster_than_baseline=sum(1 for s, latency in ok if s.baseline_ms and latency < s.baseline_ms),
        sol_score=(sum(sols) / len(sols)) if sols and len(sols) == len(scores) else None,
    )
