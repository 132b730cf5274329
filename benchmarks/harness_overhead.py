"""Harness overhead per case on CPU, against the raw cost of calling the reference once.

Measured in one run, on the vector-add and softmax fixture problems:
  - raw: one reference call in this process (median of many), input generation, one comparison;
  - process start: a worker forked from the fork server vs a fresh `python -I` interpreter;
  - whole case: `evaluate` of one case with the default protocol (10 rounds, 10 warm-up,
    50 timed calls, 5 timed checks) in both start modes, and what is left once the calls
    themselves (solution + reference, 2 × 60 + 15) are taken out.
Run: .venv/bin/python benchmarks/harness_overhead.py [--repeats 3]
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

from kernelindex.harness.compare import compare_output  # noqa: E402
from kernelindex.harness.formats import load_problem, load_solution  # noqa: E402
from kernelindex.harness.inputs import load_reference, make_inputs  # noqa: E402
from kernelindex.harness.isolation import SPAWN_VARIABLE, Worker  # noqa: E402
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


def start_cost(spawn: bool, repeats: int) -> float:
    os.environ[SPAWN_VARIABLE] = "1" if spawn else "0"
    definition = FIXTURES / "problems" / "vector_add" / "definition.json"
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(repeats):
            t0 = time.perf_counter()
            worker = Worker("reference", Path(folder), Path(folder) / f"log{i}", 16 << 30, "cpu")
            reply = worker.request({"op": "start", "device": "cpu", "definition_path": str(definition)}, time.monotonic() + 120)
            times.append(time.perf_counter() - t0)
            assert reply["ok"], reply
            worker.close()
    return statistics.median(times)


def case_cost(problem, solution, spawn: bool, repeats: int) -> float:
    os.environ[SPAWN_VARIABLE] = "1" if spawn else "0"
    options = EvalOptions(cases=[problem.cases[0].uuid])
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        suite = evaluate(problem, solution, options)
        times.append(time.perf_counter() - t0)
        assert suite.cases[0].status == "PASSED", suite.cases[0].log
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, repeats {args.repeats}")
    fork_start, spawn_start = start_cost(False, args.repeats * 2), start_cost(True, args.repeats)
    print(f"worker start: fork server {fork_start * 1e3:8.1f} ms | fresh interpreter {spawn_start * 1e3:8.1f} ms "
          f"({spawn_start / fork_start:.0f}x)")
    calls = 2 * (10 + 10 + 50) + 15  # solution and reference calls, plus the reference for 5 timed checks
    for problem_name, solution_name in PAIRS:
        problem = load_problem(FIXTURES / "problems" / problem_name)
        solution = load_solution(FIXTURES / "solutions" / solution_name / "solution.json")
        raw = raw_costs(problem)
        ref = raw["reference call"]
        print(f"\n{problem_name} (case {problem.cases[0].uuid[:8]}, axes {problem.cases[0].axes})")
        for name, value in raw.items():
            print(f"  {name:18s} {value * 1e6:10.1f} us  ({value / ref:8.1f}x one reference call)")
        for spawn in (False, True):
            total = case_cost(problem, solution, spawn, args.repeats)
            calls_cost = calls * ref
            label = "fresh interpreter" if spawn else "fork server"
            print(f"  whole case, {label:17s} {total * 1e3:9.1f} ms = {total / ref:9.0f}x one reference call; "
                  f"overhead beyond {calls} calls: {(total - calls_cost) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
