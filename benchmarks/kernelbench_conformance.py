"""KernelBench conformance: over a folder of its problems, the reference copied as ModelNew must pass
and a perturbed copy must fail, under the full harness and KernelBench's rule.

For each problem file (sizes scaled by --scale for a CPU run), two ModelNew files are written: the
reference itself (``class ModelNew(Model)``, nothing changed) and one whose outputs are moved by
1% + 1e-3 (beyond fp32's atol = rtol = 1e-4). Both run sandboxed through `harness.kernelbench`,
exactly as `kernelindex eval PROBLEM.py` runs them. Prints one line per problem and the counts;
exits 1 when any reference copy fails or any perturbed copy passes.

Problems are read where they lie (never copied into the project): the KernelBench folder of a
fetched ScalingIntelligence/KernelBench checkout, given as --kernelbench or $KERNELBENCH_DIR;
without one it says so and exits 0.

Run: .venv/bin/python benchmarks/kernelbench_conformance.py --kernelbench ../KernelBench/KernelBench \
    [--levels level1 level2] [--limit 3] [--scale 0.05] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from kernelindex.formats.errors import FormatError
from kernelindex.harness import kernelbench, kernelbench_judge
from kernelindex.harness.runner import EvalOptions, evaluate

SAME = "\n\nclass ModelNew(Model):\n    pass\n"
PERTURBED = """

class ModelNew(Model):
    def forward(self, *args):
        out = super().forward(*args)
        move = lambda t: t * 1.01 + 1e-3 if t.is_floating_point() else t + 1
        return tuple(move(t) for t in out) if isinstance(out, (tuple, list)) else move(out)
"""


def _verdict(problem: Path, tail: str, folder: Path, args) -> str:
    solution = folder / f"{problem.stem}{'_same' if tail is SAME else '_perturbed'}.py"
    solution.write_text(problem.read_text(encoding="utf-8") + tail, encoding="utf-8")
    prepared = kernelbench.prepare(problem, solution, folder / solution.stem, scale=args.scale, device=args.device)
    options = EvalOptions(
        device=args.device,
        rounds=kernelbench_judge.TRIALS,
        warmup=1,
        iterations=4,
        pairs=2,
        timeout_s=args.timeout,
        rule=kernelbench_judge.describe(prepared.precision, kernelbench_judge.TRIALS),
    )
    return evaluate(prepared.problem, prepared.solution, options).cases[0].status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", default=os.environ.get("KERNELBENCH_DIR"), help="its KernelBench/ folder")
    parser.add_argument("--levels", nargs="+", default=["level1", "level2"])
    parser.add_argument("--limit", type=int, default=3, help="problem files per level (the first by number)")
    parser.add_argument("--scale", type=float, default=0.05)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    root = Path(args.kernelbench) if args.kernelbench else None
    if root is None or not root.is_dir():
        print(f"skipped: no KernelBench problem folder (--kernelbench or $KERNELBENCH_DIR; got {root})")
        return 0
    bad = counted = 0
    for level in args.levels:
        files = sorted((root / level).glob("[0-9]*_*.py"), key=lambda p: int(p.name.split("_", 1)[0]))
        for problem in files[: args.limit]:
            started = time.monotonic()
            with tempfile.TemporaryDirectory(prefix="kb-conformance-") as scratch:
                try:
                    same = _verdict(problem, SAME, Path(scratch), args)
                    moved = _verdict(problem, PERTURBED, Path(scratch), args)
                except (FormatError, ValueError) as exc:
                    print(f"{level}/{problem.name}: not run: {exc}")
                    continue
            ok = same == "PASSED" and moved != "PASSED"
            bad += not ok
            counted += 1
            print(
                f"{level}/{problem.name}: reference {same}, perturbed {moved} "
                f"({'ok' if ok else 'NONCONFORMING'}, {time.monotonic() - started:.0f} s)"
            )
    print(f"{counted - bad}/{counted} problems conform (reference passes, perturbed fails)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
