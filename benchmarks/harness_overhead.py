"""Harness overhead per case on CPU, against the raw cost of calling the reference once, and the
spread of timing with interleaved against back-to-back batches.

Measured in one run, on the vector-add and softmax fixture problems:
  - raw: one reference call in this process (median of many), input generation, one comparison;
  - process start: a child forked from the fork server, a fresh `python -I` interpreter, a fresh
    interpreter inside a bubblewrap sandbox (a cold sandbox: what a verified run paid per case before
    issue 33) and a child forked by the warm sandbox (zygote.py: what it pays now; the zygote's own
    start, once per process, is printed apart);
  - whole case: `evaluate` of one case with the default protocol (10 rounds, 10 warm-up, 50 timed
    calls in 10 paired batches) unsandboxed (fork server), sandboxed cold and sandboxed warm, with
    the case's setup phase (its log's "harness cost": scratch, arenas, starting, loading, ending);
  - spread: p95/p05 of the solution's per-call samples and the spread (max/min) of the case's
    speedup over repeated evaluations, timed interleaved (10 paired batches, A/B/B/A...) against
    back-to-back (1 batch: every reference call, then every solution call).
Run: .venv/bin/python benchmarks/harness_overhead.py [--repeats 3] [--no-spread]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kernelindex.formats.problem import load_problem  # noqa: E402
from kernelindex.formats.solution import load_solution  # noqa: E402
from kernelindex.harness import sandbox, zygote  # noqa: E402
from kernelindex.harness.arena import Arena  # noqa: E402
from kernelindex.harness.compare import compare_output  # noqa: E402
from kernelindex.harness.inputs import load_reference, make_inputs  # noqa: E402
from kernelindex.harness.isolation import SPAWN_VARIABLE, Child  # noqa: E402
from kernelindex.harness.runner import EvalOptions, evaluate  # noqa: E402

FIXTURES = ROOT / "tests" / "harness" / "fixtures"
PAIRS = [("vector_add", "vector_add_torch"), ("softmax", "softmax_torch")]


def median_time(fn, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def raw_costs(problem) -> dict:
    d, case = problem.definition, problem.cases[0]
    ref = load_reference(d)
    inputs = make_inputs(d, case, "round", 0, "cpu", problem.root)
    out = ref.run(*inputs.values())
    spec = next(iter(d.outputs.values()))
    return {
        "reference call": median_time(lambda: ref.run(*inputs.values()), 2000),
        "input generation": median_time(lambda: make_inputs(d, case, "round", 1, "cpu", problem.root), 500),
        "one comparison": median_time(lambda: compare_output(spec.name, spec, out, out, case.tolerance), 500),
    }


def _mode(mode: str) -> bool:
    """Set the environment for `mode`; whether it is sandboxed."""
    os.environ[SPAWN_VARIABLE] = "1" if mode == "fresh interpreter" else "0"
    os.environ[zygote.WARM_VARIABLE] = "0" if mode == "sandboxed cold" else "1"
    return mode.startswith("sandboxed")


def start_cost(mode: str, repeats: int) -> tuple[float, float]:
    """(median seconds from asking for a reference child to its first reply (it has imported torch and
    the harness), seconds of the first start, which starts the fork server or the zygote)."""
    sandboxed = _mode(mode)
    problem_dir = FIXTURES / "problems" / "vector_add"
    root = sandbox.SCRATCH if sandboxed else str(problem_dir)
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(repeats + 1):
            arena = Arena(1 << 16, "cpu")
            t0 = time.perf_counter()
            child = Child(
                "reference", problem_dir, Path(folder) / f"log{i}", 16 << 30, "cpu", arena, sandboxed, writable=False
            )
            reply = child.request(
                {
                    "op": "load",
                    "arena": arena.handle(),
                    "device": "cpu",
                    "definition_path": f"{root}/definition.json",
                    "problem_root": root,
                },
                time.monotonic() + 120,
            )
            times.append(time.perf_counter() - t0)
            assert reply["ok"], reply
            child.close()
            arena.close()
    return statistics.median(times[1:]), times[0]


def case_cost(problem, solution, mode: str, repeats: int) -> tuple[float, float]:
    """(median seconds of a whole one-case `evaluate`, median seconds of its case's setup phase)."""
    sandboxed = _mode(mode)
    options = EvalOptions(cases=[problem.cases[0].uuid], sandbox="required" if sandboxed else "off")
    times, setups = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        suite = evaluate(problem, solution, options)
        times.append(time.perf_counter() - t0)
        assert suite.cases[0].status == "PASSED", suite.cases[0].log
        setups.append(suite.cases[0].phases["setup"])
    return statistics.median(times), statistics.median(setups)


def spread_figures(problem, solution, pairs: int, repeats: int) -> tuple[float, float, float]:
    """(median p95/p05 of per-call samples, max/min of the speedup over repeats, median interval width)."""
    options = EvalOptions(cases=[problem.cases[0].uuid], pairs=pairs, sandbox="off")
    spreads, speedups, widths = [], [], []
    for _ in range(repeats):
        case = evaluate(problem, solution, options).cases[0]
        assert case.passed, case.log
        spreads.append(case.latency.p95 / case.latency.p05)
        speedups.append(case.score.speedup)
        if case.speedup:
            widths.append(case.speedup.relative_width)
    return (
        statistics.median(spreads),
        max(speedups) / min(speedups),
        statistics.median(widths) if widths else float("nan"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-spread", action="store_true", help="skip the timing-spread figures")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, repeats {args.repeats}")
    modes = ("fork server", "fresh interpreter", "sandboxed cold", "sandboxed warm")
    starts = {mode: start_cost(mode, args.repeats) for mode in modes}
    print(
        "child start: "
        + " | ".join(f"{mode} {value * 1e3:8.1f} ms" for mode, (value, _) in starts.items())
        + f"  (cold / warm sandbox {starts['sandboxed cold'][0] / starts['sandboxed warm'][0]:.0f}x;"
        + f" warm sandbox / fork server {starts['sandboxed warm'][0] / starts['fork server'][0]:.1f}x;"
        + f" the zygote's own start, once per process: {starts['sandboxed warm'][1]:.2f} s)"
    )
    calls = 2 * (
        10 + 10 + 50
    )  # solution and reference calls (the reference's timed outputs are the checks' references)
    for problem_name, solution_name in PAIRS:
        problem = load_problem(FIXTURES / "problems" / problem_name)
        solution = load_solution(FIXTURES / "solutions" / solution_name / "solution.json")
        raw = raw_costs(problem)
        ref = raw["reference call"]
        print(f"\n{problem_name} (case {problem.cases[0].uuid[:8]}, axes {problem.cases[0].axes})")
        for name, value in raw.items():
            print(f"  {name:18s} {value * 1e6:10.1f} us  ({value / ref:8.1f}x one reference call)")
        whole = {mode: case_cost(problem, solution, mode, args.repeats) for mode in ("fork server", *modes[2:])}
        for mode, (total, setup) in whole.items():
            print(
                f"  whole case, {mode:14s} {total * 1e3:9.1f} ms = {total / whole['fork server'][0]:5.2f}x unsandboxed"
                f" = {total / ref:9.0f}x one reference call; overhead beyond {calls} calls:"
                f" {(total - calls * ref) * 1e3:8.1f} ms; setup phase {setup * 1e3:7.1f} ms"
            )
        if args.no_spread:
            continue
        for label, pairs in (("interleaved, 10 pairs", 10), ("back-to-back, 1 pair", 1)):
            p95p05, drift, width = spread_figures(problem, solution, pairs, args.repeats)
            print(
                f"  {label:22s} per-call p95/p05 {p95p05:6.2f} | speedup max/min over {args.repeats} evals {drift:5.2f} "
                f"| 95% interval width / speedup {width:5.2f}"
            )


if __name__ == "__main__":
    main()
