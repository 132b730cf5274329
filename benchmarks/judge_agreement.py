"""Our restated benchmark rules against each benchmark's own judge, on many random cases.

The differential check of tests/harness/test_judge_agreement.py at scale (the cases, and each
benchmark's verdict from its own code, come from tests/harness/judge_testkit.py):

    PYTHONPATH=src KERNELINDEX_SOL_EXECBENCH_SRC=/work/upstream/sol/src \\
        .venv/bin/python benchmarks/judge_agreement.py [--cases 20000] [--seed N] [--show 5]

Per format: cases, agreed, disagreed (the first --show described, each with the seed that redraws it
alone: ``judge_testkit.draw_case(seed, format)``), the cases upstream's own code raised on (kept
apart: FlashInfer-Bench on an fp8 e4m3fn output, which torch has no isinf for), and our verdicts by
status. For SOL-ExecBench also the reading of as many drawn tolerance objects (valid or not) beside
its Workload model's. A format whose upstream code is absent is skipped with the reason. Exit 1 on
any disagreement.
"""

from __future__ import annotations

import argparse
import random
import secrets
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "harness"))

import judge_testkit as kit  # noqa: E402


def _verdicts(benchmark: str, seed: int, cases: int, show: int) -> int:
    rng = random.Random(seed)
    statuses: Counter[str] = Counter()
    agreed, raised, disagreements = 0, Counter[str](), []
    started = time.perf_counter()
    for _ in range(cases):
        outcome = kit.judge(kit.draw_case(rng.getrandbits(63), benchmark))
        statuses[outcome.ours.status] += 1
        if outcome.theirs is None and kit.known_upstream_failure(outcome):
            raised[outcome.raised.splitlines()[0][:120]] += 1
        elif outcome.agreed:
            agreed += 1
        else:
            disagreements.append(outcome)
    took = time.perf_counter() - started
    print(
        f"{benchmark}: {cases} cases, {agreed} agreed, {len(disagreements)} disagreed, {sum(raised.values())} "
        f"upstream raised on ({took:.1f} s)"
    )
    print(f"  our verdicts: {dict(sorted(statuses.items()))}")
    for message, count in raised.items():
        print(f"  upstream raised {count}x: {message}")
    for outcome in disagreements[:show]:
        print(f"  DISAGREE {outcome.describe()}")
    return len(disagreements)


def _tolerances(seed: int, cases: int, show: int) -> int:
    rng = random.Random(seed)
    kinds: Counter[str] = Counter()
    odd = []
    for _ in range(cases):
        raw = kit.draw_sol_tolerance(rng, rng.randint(0, 300), valid=False) if rng.random() > 0.03 else None
        reading = kit.read_tolerance(raw)
        kinds[reading.kind] += 1
        if reading.kind not in kit.TOLERANCE_READINGS:
            odd.append(reading)
    print(f"sol_execbench tolerance reading: {cases} objects, {dict(sorted(kinds.items()))}")
    for reading in odd[:show]:
        print(f"  DISAGREE {reading.describe()}")
    return len(odd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20000, help="cases per format (default 20000)")
    parser.add_argument("--seed", type=int, default=None, help="run seed (default: fresh, printed)")
    parser.add_argument("--show", type=int, default=5, help="disagreements described per format")
    args = parser.parse_args()
    if args.cases < 1 or args.show < 0:
        parser.error("--cases must be at least 1 and --show at least 0")
    seed = secrets.randbits(63) if args.seed is None else args.seed
    print(f"run seed {seed}, {args.cases} cases per format")
    missing = {"sol_execbench": kit.sol_source()[1], "flashinfer_bench": kit.fib_missing()}
    disagreed = 0
    for benchmark in kit.BENCHMARKS:
        if missing[benchmark]:
            print(f"{benchmark}: skipped: {missing[benchmark]}")
            continue
        disagreed += _verdicts(benchmark, seed, args.cases, args.show)
        if benchmark == "sol_execbench":
            disagreed += _tolerances(seed, args.cases, args.show)
    print("all agree" if not disagreed else f"{disagreed} disagreements")
    return 1 if disagreed else 0


if __name__ == "__main__":
    sys.exit(main())
