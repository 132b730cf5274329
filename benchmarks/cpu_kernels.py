"""Our kernels' CPU paths against the problems' f32 references, at full size, on the same inputs.

042: all 16 published cases; 009: cases 0, 8 and 14 by default (each costs 12·N·H·F f32 flops twice).
Per case: wall times of the reference (which allocates its result, as upstream) and of ours
(destination-passing, as the harness calls it), taken in turns; the best (and the median in brackets)
of each, the ratio of the bests (the figure least disturbed by other load on a shared machine), and the
harness's correctness check of our outputs against the reference under the case's tolerance. Exits non-zero when a case fails or
ours is slower than the reference on any case.

    .venv/bin/python benchmarks/cpu_kernels.py [--scatter-cases 0 8 14] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from kernelindex import kernels, problems
from kernelindex.formats.problem import load_problem
from kernelindex.formats.solution import load_solution
from kernelindex.harness.compare import compare_output
from kernelindex.harness.inputs import load_reference, seed_for


def _interleaved_s(first, second, repeats: int) -> tuple[list[float], list[float]]:
    """Wall times of two calls taken in turns (after one warm-up each), so load from other processes
    on the machine falls on both alike."""
    start = time.perf_counter()
    first(), second()
    # quick calls get more turns (up to about a second's worth): a shared machine's scheduler hiccups
    # are milliseconds long and would otherwise decide the ratio of two sub-millisecond calls
    repeats = max(repeats, min(500, int(1.0 / max(time.perf_counter() - start, 1e-6))))
    a, b = [], []
    for _ in range(repeats):
        for fn, times in ((first, a), (second, b)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return a, b


def _entry(solution_path):
    """Our solution's entry point, imported the ordinary way (the harness stages the same files)."""
    solution = load_solution(solution_path)
    module = __import__(f"kernelindex.kernels.{solution_path.parent.name}.kernel", fromlist=["run"])
    return getattr(module, solution.entry_function)


def bench(problem_dir, solution_path, indices, repeats) -> list[dict]:
    problem = load_problem(problem_dir)
    reference = load_reference(problem.definition)
    ours = _entry(solution_path)
    rows = []
    for index in indices:
        case = problem.cases[index]
        axes = problem.definition.resolve_axes(case.axes)
        torch.manual_seed(seed_for(case.uuid, "round", 0, "<custom>"))
        inputs = list(reference.make_inputs(axes, "cpu").values())
        with torch.no_grad():
            expected = reference.run(*inputs)
            expected = expected if isinstance(expected, tuple) else (expected,)
            outs = [torch.full_like(e, float("nan")) for e in expected]
            ours(*inputs, *outs)
            checks = [
                compare_output(n, s, o, e, case.tolerance)
                for (n, s), o, e in zip(problem.definition.outputs.items(), outs, expected)
            ]
            del expected
            t_ref, t_ours = _interleaved_s(lambda: reference.run(*inputs), lambda: ours(*inputs, *outs), repeats)
        status = "PASSED" if all(c.status == "PASSED" for c in checks) else "FAILED"
        worst = min(c.matched_ratio for c in checks)
        rows.append(
            {
                "case": index,
                "uuid": case.uuid,
                "axes": dict(case.axes),
                "status": status,
                "min_matched": worst,
                "reference_ms": min(t_ref) * 1e3,
                "ours_ms": min(t_ours) * 1e3,
                "reference_median_ms": statistics.median(t_ref) * 1e3,
                "ours_median_ms": statistics.median(t_ours) * 1e3,
                "speedup": min(t_ref) / min(t_ours),
            }
        )
        r = rows[-1]
        print(
            f"  {index:>2} {case.uuid[:8]} {str(r['axes']):<44} {status:<7} match {worst:.4f}  "
            f"ref {r['reference_ms']:9.2f} ({r['reference_median_ms']:9.2f}) ms  "
            f"ours {r['ours_ms']:9.2f} ({r['ours_median_ms']:9.2f}) ms  ×{r['speedup']:.2f}",
            flush=True,
        )
        del inputs, outs
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scatter-cases", type=int, nargs="*", default=[0, 8, 14])
    parser.add_argument("--balance-cases", type=int, nargs="*", default=list(range(16)))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("042 moe_load_balance_bwd (full size)")
    balance = bench(problems.LOAD_BALANCE_BWD, kernels.LOAD_BALANCE_BWD, args.balance_cases, args.repeats)
    print("009 moe_token_scatter_bwd (full size)")
    scatter = bench(
        problems.TOKEN_SCATTER_BWD, kernels.TOKEN_SCATTER_BWD, args.scatter_cases, max(2, args.repeats // 2)
    )
    bad = [r for r in balance + scatter if r["status"] != "PASSED" or r["speedup"] < 1.0]
    for name, rows in (("042", balance), ("009", scatter)):
        if rows:
            geo = statistics.geometric_mean([r["speedup"] for r in rows])
            print(
                f"{name}: geomean speedup over the reference ×{geo:.2f}, slowest ×{min(r['speedup'] for r in rows):.2f}"
            )
    if bad:
        print(f"NOT MET on cases: {[(r['case'], r['status'], round(r['speedup'], 3)) for r in bad]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
