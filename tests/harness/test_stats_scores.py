"""Summary statistics and the leaderboard's scores."""

from __future__ import annotations

import random

import pytest

from kernelindex.harness.scores import CaseScore, geomean, peaks_for, sol_score, suite_score
from kernelindex.harness.stats import summarize


def test_summary_of_known_samples():
    seed = random.randrange(1 << 30)
    print("shuffle seed", seed)
    samples = list(range(1, 101))
    random.Random(seed).shuffle(samples)
    s = summarize(samples)
    assert (s.count, s.median, s.mean, s.min, s.max) == (100, 50.5, 50.5, 1, 100)
    assert s.p05 == pytest.approx(5.95) and s.p95 == pytest.approx(95.05)
    assert s.mad == 25.0
    assert s.ci95_low < s.median < s.ci95_high and 40 < s.ci95_low and s.ci95_high < 61
    # seeded bootstrap: the same samples give the same interval, in any order (the order once moved
    # the interval's ends by up to 1.5, past this test's bounds for ~1 shuffle in 100)
    assert summarize(samples) == s == summarize(sorted(samples)) == summarize(samples[::-1])
    constant = summarize([7] * 20)
    assert (constant.ci95_low, constant.ci95_high, constant.mad) == (7, 7, 0)


def test_sol_score_formula():
    assert sol_score(1.0, 1.0, 10.0) == 1.0
    assert sol_score(10.0, 1.0, 10.0) == pytest.approx(0.5)
    assert sol_score(0.5, 1.0, 10.0) == 1.0  # faster than SOL clamps to 1
    assert sol_score(4.0, 1.0, 10.0) == pytest.approx(1 / (1 + 3 / 9))
    assert sol_score(2.0, 1.0, 1.0) == 0.0 and sol_score(1.0, 1.0, 0.5) == 1.0


def test_suite_score_counts_failures_as_zero():
    a = CaseScore(1.0, 2.0, 2.0, 4.0, "workload", 0.5, sol_score(1.0, 0.5, 4.0))
    b = CaseScore(None, 2.0, None, 4.0, "workload", 0.5, 0.0)
    s = suite_score([a, b], [True, False])
    assert s.passed == 1 and s.geomean_latency_ms == 1.0 and s.geomean_speedup == 4.0
    assert s.sol_score == pytest.approx(a.sol / 2) and s.faster_than_baseline == 1
    assert geomean([1, 4, 16]) == pytest.approx(4)
    assert peaks_for("NVIDIA GB200")[0] == 2.5e15 and peaks_for("NVIDIA H100 80GB HBM3") is not None
    assert peaks_for("AMD EPYC") is None
