"""Upstream problems through our reader and harness: each problem's own reference run as the solution.

Given a folder of upstream problem folders (SOL-ExecBench's 235, or FlashInfer-Bench's; each with
definition.json and workload.jsonl), every problem is read as `eval` and `import` read it (accepted,
or refused with the reason), its records are built, and its reference is evaluated as a solution on
the first case(s): a reference must pass against itself. Per problem: accepted / verdict / reason,
wall time and the peak resident memory of the harness's processes so far; then the totals.

    .venv/bin/python benchmarks/upstream_conformance.py PROBLEMS_DIR [--limit N] [--cases 1] [--only 12 40]

Without PROBLEMS_DIR (or `$KERNELINDEX_UPSTREAM_PROBLEMS`) it says so and exits 0. The data is read
where it lies and never copied into the project.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from kernelindex.formats.errors import FormatError
from kernelindex.formats.packs import problem_folders
from kernelindex.formats.problem import Problem, load_problem
from kernelindex.formats.records import records_for
from kernelindex.formats.solution import load_solution
from kernelindex.records.errors import RecordError


def _order(folder: Path) -> tuple[int, str]:
    return (int(folder.name), "") if folder.name.isdigit() else (1 << 30, folder.name)


def reference_solution(problem: Problem, folder: Path):
    """The definition's reference as a value-returning pytorch solution of that definition."""
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "name": f"{problem.definition.name}-reference",
        "definition": problem.definition.name,
        "spec": {"languages": ["pytorch"], "entry_point": "reference.py::run", "destination_passing_style": False},
        "sources": [{"path": "reference.py", "content": problem.definition.reference}],
    }
    (folder / "solution.json").write_text(json.dumps(document), encoding="utf-8")
    return load_solution(folder / "solution.json")


def _peak_mib() -> float:
    """Peak resident memory of the largest process the harness started so far (KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def run_one(folder: Path, args, scratch: Path) -> dict:
    from kernelindex.harness.runner import EvalOptions, evaluate

    row: dict = {"problem": folder.name}
    started = time.perf_counter()
    try:
        problem = load_problem(folder)
        records_for(problem)
    except (FormatError, RecordError) as exc:
        row.update(accepted=False, verdict="REFUSED", reason=str(exc))
        return row
    row.update(accepted=True, name=problem.definition.name, format=problem.format, warnings=len(problem.warnings))
    options = EvalOptions(
        rounds=args.rounds,
        warmup=1,
        iterations=args.iterations,
        pairs=1,
        timeout_s=args.timeout,
        memory_limit_mb=args.memory_mb,
        cases=[case.uuid for case in problem.cases[: args.cases]],
    )
    suite = evaluate(problem, reference_solution(problem, scratch / folder.name), options)
    verdicts = Counter(result.status for result in suite.cases)
    failed = next((result for result in suite.cases if not result.passed), None)
    row.update(
        verdict="PASSED" if failed is None else failed.status,
        verdicts=dict(verdicts),
        reason="" if failed is None else failed.log.strip().splitlines()[-1][:200] if failed.log.strip() else "",
        disagreements=sum(len(result.disagreements) for result in suite.cases),
    )
    row["seconds"] = round(time.perf_counter() - started, 2)
    row["peak_mib"] = round(_peak_mib())
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="?", default=os.environ.get("KERNELINDEX_UPSTREAM_PROBLEMS"))
    parser.add_argument("--limit", type=int, default=None, help="the first N problems only")
    parser.add_argument("--only", nargs="*", default=None, help="these problem folder names only")
    parser.add_argument("--cases", type=int, default=1, help="cases run per problem (the first ones)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--memory-mb", type=int, default=8192)
    parser.add_argument("--load-only", action="store_true", help="read and build records; run nothing")
    parser.add_argument("--json", action="store_true", help="one JSON object a problem")
    args = parser.parse_args()
    if not args.problems or not Path(args.problems).is_dir():
        print(
            f"skipped: no folder of upstream problems ({args.problems or 'none given'}; pass one or set "
            "KERNELINDEX_UPSTREAM_PROBLEMS)"
        )
        return 0
    folders = sorted(problem_folders(Path(args.problems)), key=_order)
    if args.only:
        folders = [f for f in folders if f.name in set(args.only)]
    folders = folders[: args.limit]
    totals: Counter = Counter()
    with tempfile.TemporaryDirectory(prefix="kernelindex-conformance-") as tmp:
        for folder in folders:
            if args.load_only:
                try:
                    records_for(load_problem(folder))
                    row = {"problem": folder.name, "accepted": True, "verdict": "LOADED", "reason": ""}
                except (FormatError, RecordError) as exc:
                    row = {"problem": folder.name, "accepted": False, "verdict": "REFUSED", "reason": str(exc)}
            else:
                row = run_one(folder, args, Path(tmp))
            totals["accepted" if row["accepted"] else "refused"] += 1
            totals[row["verdict"]] += 1
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                figures = f"{row.get('seconds', 0):8.1f} s {row.get('peak_mib', 0):7d} MiB" if "seconds" in row else ""
                print(f"{row['problem']:>6} {row['verdict']:<22} {figures} {row['reason'][:160]}", flush=True)
    print(f"{len(folders)} problems: " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())))
    return 0 if totals["refused"] == 0 and totals["PASSED"] + totals["LOADED"] == len(folders) else 1


if __name__ == "__main__":
    sys.exit(main())
