"""Upstream problems through our reader and harness: each problem's own reference run as the solution.

One driver for the three upstream formats (``--format sol|fib|kernelbench``, or ``auto``: told from
the folder). SOL-ExecBench and FlashInfer-Bench: a folder of problem folders (definition.json and
workload.jsonl), or a FlashInfer-Bench trace set (its dataset layout: one problem a definition, its workload
lines gathered from every file as its loader gathers them, blobs from the set's root); every problem is read as `eval` and `import` read it (accepted, or refused with the
reason), its records are built and imported into a scratch SQLite store as `kernelindex import FOLDER`
imports it, and its reference is evaluated as a solution on the first case(s): a reference must pass
against itself, and with --perturbed a copy whose outputs are moved beyond any tolerance must fail (a
FlashInfer-Bench sampling problem is judged by its sampling rule, harness/sampling_judge.py: samples moved
by 32 tokens leave the support or the distribution; one its evaluator cannot read is refused up front). A
case whose buffers cannot fit the machine, or whose safetensors inputs are nowhere, is refused up front
(REFUSED_UP_FRONT, with the figures or the missing file), which conforms: upstream cannot run it either;
so does a reference that itself asks for CUDA on a CPU run (NEEDS_GPU) or whose own temporaries pass its
process's memory cap (NEEDS_MEMORY: both still the reference's INVALID_REFERENCE, never the solution's status).
KernelBench: its KernelBench/ folder (level1, level2, ...) or one level folder; per problem file
(sizes scaled by --scale for a CPU run, or by the first of its doubles at which Model runs: the row's
`scale` then says which) the reference copied as ModelNew must pass and a copy whose
outputs are moved by 1% + 1e-3 (beyond fp32's atol = rtol = 1e-4) must fail, both sandboxed through
`harness.kernelbench` under KernelBench's rule, as `kernelindex eval PROBLEM.py` runs them. Per
problem: accepted / verdict / reason, wall time and the peak resident memory of the harness's
processes (sampled while the problem runs); then the totals; exit 1 when any problem does not conform.

    .venv/bin/python benchmarks/upstream_conformance.py PROBLEMS_DIR [--format auto] [--limit N] [--cases 1]
        [--only 12 40] [--levels level1 level2] [--scale 0.05] [--device cpu] [--load-only] [--perturbed]
        [--pick first|smallest]

Without PROBLEMS_DIR (or `$KERNELINDEX_UPSTREAM_PROBLEMS`, or `$KERNELBENCH_DIR` for KernelBench) it
says so and exits 0. The data is read where it lies and never copied into the project.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from kernelindex.formats import trace_set
from kernelindex.formats.errors import FormatError
from kernelindex.formats.packs import problem_folders
from kernelindex.formats.problem import Problem, load_problem
from kernelindex.formats.records import records_for
from kernelindex.formats.solution import load_solution
from kernelindex.harness import trace_sets
from kernelindex.records.errors import RecordError
from kernelindex.store import open_store

# --format word -> formats.problem.problem_format's name (KernelBench files are no problem folder)
FORMATS = {"sol": "sol_execbench", "fib": "flashinfer_bench", "kernelbench": "kernelbench"}
SAME = "\n\nclass ModelNew(Model):\n    pass\n"
PERTURBED = """

class ModelNew(Model):
    def forward(self, *args):
        out = super().forward(*args)
        move = lambda t: t * 1.01 + 1e-3 if t.is_floating_point() else t + 1
        return tuple(move(t) for t in out) if isinstance(out, (tuple, list)) else move(out)
"""


# SOL-ExecBench / FlashInfer-Bench: the reference with every output moved beyond any tolerance these
# benchmarks give (atol up to 17, rtol up to 0.05 in SOL-ExecBench's 235 problems): must fail. A bool
# is flipped, which fails only where atol < 1 (SOL-ExecBench judges bools as f32 0/1 under the same
# tolerance; its one bool output has atol 1e-5)
PERTURBED_RUN = """

_reference_run = run


def run(*args, **kwargs):
    import torch

    def move(t):
        if not isinstance(t, torch.Tensor):
            return t
        if t.dtype == torch.bool:
            return ~t
        return t * 1.25 + 32 if t.is_floating_point() else t + 32

    out = _reference_run(*args, **kwargs)
    return tuple(move(t) for t in out) if isinstance(out, (tuple, list)) else move(out)
"""


def _order(folder: Path) -> tuple[int, str]:
    return (int(folder.name), "") if folder.name.isdigit() else (1 << 30, folder.name)


def reference_solution(problem: Problem, folder: Path, tail: str = ""):
    """The definition's reference as a value-returning pytorch solution of that definition (``tail``
    appended to its source: PERTURBED_RUN makes the copy that must fail)."""
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "name": f"{problem.definition.name}-{'perturbed' if tail else 'reference'}",
        "definition": problem.definition.name,
        "spec": {"languages": ["pytorch"], "entry_point": "reference.py::run", "destination_passing_style": False},
        "sources": [{"path": "reference.py", "content": problem.definition.reference + tail}],
    }
    (folder / "solution.json").write_text(json.dumps(document), encoding="utf-8")
    return load_solution(folder / "solution.json")


def _pss(pid: int) -> int:
    """Proportional set size of one process in bytes: shared pages (torch's libraries, forked workers')
    split among their sharers, so the sum over processes is what they hold together."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _tree_memory(root: int) -> int:
    """Bytes ``root`` and every process below it (the harness's sandboxes and workers) hold now."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    below, todo = {root}, [root]
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid and child not in below:
                below.add(child)
                todo.append(child)
    return sum(_pss(pid) for pid in below)


class PeakMemory:
    """The most this process and its descendants held at once (proportional set size), sampled every
    0.5 s while a problem runs (getrusage cannot say: the harness's warm workers outlive a problem, unreaped)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, _tree_memory(os.getpid()))

    def __enter__(self) -> PeakMemory:
        self.peak = _tree_memory(os.getpid())
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _tree_memory(os.getpid()))

    @property
    def mib(self) -> int:
        return round(self.peak / (1 << 20))


# a reference's failure that says this CPU run cannot have what upstream's GPU run has -> why
# what a reference's failure says -> (the row's verdict, why): it cannot run here, as upstream's could not on
# this machine; still the reference's INVALID_REFERENCE in the run, never the solution's status
WANTS = {
    "Torch not compiled with CUDA enabled": ("NEEDS_GPU", "the reference asks for device cuda itself"),
    "Invalid scaling configuration": (
        "NEEDS_GPU",
        "torch._scaled_mm has no CPU kernel for block-scaled operands (fp4/fp8 blocks)",
    ),
    "can't allocate memory": ("NEEDS_MEMORY", "the reference's own temporaries passed its process's memory cap"),
    "MemoryError": ("NEEDS_MEMORY", "the reference's own temporaries passed its process's memory cap"),
    "exceeded the memory limit": ("NEEDS_MEMORY", "the reference's own temporaries passed its process's memory cap"),
}


def wants(suite) -> tuple[str, str] | None:
    """(verdict, why) where the reference could not run on this machine (WANTS), else None."""
    for result in suite.cases:
        if result.status == "INVALID_REFERENCE":
            for said, found in WANTS.items():
                if said in result.log:
                    return found
    return None


def _failure(suite) -> tuple[str, str]:
    """The verdict of a suite (PASSED, or its first failing case's) and that case's last log line."""
    failed = next((result for result in suite.cases if not result.passed), None)
    if failed is None:
        return "PASSED", ""
    return failed.status, failed.log.strip().splitlines()[-1][:200] if failed.log.strip() else ""


def import_folder(folder: Path, store, blob_root: str | None) -> str:
    """The folder imported into ``store`` as `kernelindex import FOLDER --blob-root ROOT` imports it: "" or why it
    was refused."""
    from kernelindex.ingest.problems import ImportFailed
    from kernelindex.services.imports import import_paths

    try:
        import_paths(store, [folder], blob_root=blob_root)
    except ImportFailed as exc:
        return str(exc)
    return ""


def _suite(problem: Problem, folder: Path, tail: str, args):
    from kernelindex.harness.runner import EvalOptions, evaluate

    options = EvalOptions(
        device=args.device,
        rounds=args.rounds,
        warmup=1,
        iterations=args.iterations,
        pairs=1,
        timeout_s=args.timeout or 120.0,
        memory_limit_mb=args.memory_mb,
        cases=[case.uuid for case in picked_cases(problem, args)],
        blob_root=args.blob_root,
    )
    return evaluate(problem, reference_solution(problem, folder, tail), options)


def picked_cases(problem: Problem, args) -> list:
    """The --cases cases run: the first ones, or (--pick smallest) those of the fewest buffer bytes."""
    from kernelindex.harness.arena import Layout

    if args.pick == "first":
        return problem.cases[: args.cases]
    return sorted(problem.cases, key=lambda case: Layout.build(problem.definition, case, 1).slot_bytes)[: args.cases]


def run_folder(folder: Path, args, scratch: Path, store) -> dict:
    """A SOL-ExecBench / FlashInfer-Bench problem folder: read, records built, imported into the scratch
    store, the reference run as the solution (and with --perturbed a copy with moved outputs, which must fail)."""
    from kernelindex.formats.blobs import BlobMissing
    from kernelindex.harness.memory import DoesNotFit
    from kernelindex.harness.sampling_judge import Unjudgeable

    row: dict = {"problem": folder.stem}
    started = time.perf_counter()
    try:
        if folder.is_file():  # a definition of a FlashInfer-Bench trace set: its lines as a problem folder
            folder, _ = trace_sets.problem_folder(folder, scratch / "trace-set")
        problem = load_problem(folder)
        records_for(problem, args.blob_root)
    except (FormatError, RecordError) as exc:
        row.update(accepted=False, verdict="REFUSED", reason=str(exc))
        return row
    row.update(accepted=True, name=problem.definition.name, format=problem.format, warnings=len(problem.warnings))
    if args.format != "auto" and problem.format != FORMATS[args.format]:
        row.update(accepted=False, verdict="REFUSED", reason=f"a {problem.format} problem, not {args.format}")
        return row
    refused = import_folder(folder, store, args.blob_root)
    if refused:
        row.update(accepted=False, verdict="REFUSED", reason=f"import: {refused}")
        return row
    if args.load_only:
        row.update(verdict="LOADED", reason="")
        return row
    suite = None
    with PeakMemory() as peak:
        try:
            suite = _suite(problem, scratch / folder.name, "", args)
            row["verdict"], row["reason"] = _failure(suite)
            wanted = wants(suite) if row["verdict"] == "INVALID_REFERENCE" and args.device == "cpu" else None
            if wanted:  # upstream runs only on a GPU, with its memory: there the reference has what it asks
                row.update(verdict=wanted[0], reason=f"{wanted[1]}: {row['reason']}")
            if args.perturbed:
                moved = _suite(problem, scratch / f"{folder.name}-perturbed", PERTURBED_RUN, args)
                row["perturbed"] = _failure(moved)[0]
                if row["perturbed"] == "PASSED":
                    row.update(verdict="NONCONFORMING", reason="the perturbed copy passed too")
        except (DoesNotFit, BlobMissing, Unjudgeable) as exc:  # refused before any process starts
            row.update(verdict="REFUSED_UP_FRONT", reason=str(exc))
    row.update(seconds=round(time.perf_counter() - started, 2), peak_mib=peak.mib)
    if suite is not None:
        row.update(
            disagreements=sum(len(result.disagreements) for result in suite.cases),
            phases={k: round(v, 1) for k, v in suite.cases[0].phases.items()} if suite.cases else {},
        )
    return row


def _kernelbench_suite(problem: Path, tail: str, folder: Path, args, probed: dict | None = None):
    """The suite of the problem with ``tail`` appended as its ModelNew, and what `prepare` made of it."""
    from kernelindex.harness import kernelbench, kernelbench_judge
    from kernelindex.harness.runner import EvalOptions, evaluate

    solution = folder / f"{problem.stem}{'_same' if tail is SAME else '_perturbed'}.py"
    solution.write_text(problem.read_text(encoding="utf-8") + tail, encoding="utf-8")
    prepared = kernelbench.prepare(
        problem, solution, folder / solution.stem, scale=args.scale, device=args.device, probed=probed
    )
    options = EvalOptions(
        device=args.device,
        rounds=kernelbench_judge.TRIALS,
        warmup=1,
        iterations=4,
        pairs=2,
        timeout_s=args.timeout or 300.0,
        rule=kernelbench_judge.describe(prepared.precision, kernelbench_judge.TRIALS),
    )
    return evaluate(prepared.problem, prepared.solution, options), prepared


def run_kernelbench(path: Path, args, scratch: Path) -> dict:
    """A KernelBench problem file: the reference as ModelNew must pass, a perturbed copy must fail."""
    from kernelindex.harness import kernelbench

    row: dict = {"problem": f"{path.parent.name}/{path.name}", "format": "kernelbench"}
    started = time.perf_counter()
    folder = scratch / path.parent.name / path.stem
    folder.mkdir(parents=True)
    try:
        if args.load_only:
            records_for(load_problem(kernelbench.problem_folder(path, folder, scale=args.scale)))
            row.update(accepted=True, verdict="LOADED", reason="")
            return row
        with PeakMemory() as peak:
            same, prepared = _kernelbench_suite(path, SAME, folder, args)
            # at the scale the first found (more than --scale where Model fails at --scale's sizes)
            args_used = argparse.Namespace(**{**vars(args), "scale": prepared.file.scale})
            moved, _ = _kernelbench_suite(path, PERTURBED, folder, args_used, prepared.probe)
        row["peak_mib"] = peak.mib
    except (FormatError, RecordError, ValueError) as exc:  # ValueError: harness.kernelbench.TooLarge, no GPU
        row.update(accepted=False, verdict="REFUSED", reason=str(exc))
        return row
    row["verdict"], row["reason"] = _failure(same)
    row["perturbed"] = _failure(moved)[0]
    if row["verdict"] == "PASSED" and row["perturbed"] == "PASSED":
        row.update(verdict="NONCONFORMING", reason="the perturbed copy passed too")
    row.update(accepted=True, seconds=round(time.perf_counter() - started, 2))
    if prepared.file.scale != args.scale:
        row.update(scale=prepared.file.scale)
    return row


def kernelbench_files(root: Path, levels: list[str]) -> list[Path]:
    """The problem files of one level folder, or of ``levels`` under a KernelBench/ folder, by number."""
    from kernelindex.harness.kernelbench import is_problem_folder

    folders = [root] if is_problem_folder(root) else [root / level for level in levels if (root / level).is_dir()]
    return [
        path
        for folder in folders
        for path in sorted(folder.glob("[0-9]*_*.py"), key=lambda p: int(p.name.split("_", 1)[0]))
    ]


def detect(root: Path) -> str:
    """``kernelbench`` for a folder of KernelBench files (or of level folders holding them), else ``auto``:
    each problem folder says its own format."""
    from kernelindex.harness.kernelbench import is_problem_folder

    if problem_folders(root):
        return "auto"
    if is_problem_folder(root) or any(is_problem_folder(p) for p in root.glob("level*")):
        return "kernelbench"
    return "auto"


def _problems(root: Path, args) -> list[Path]:
    if args.format == "kernelbench":
        files = kernelbench_files(root, args.levels)
        if args.only:
            files = [f for f in files if {f.name, f.stem, f.name.split("_", 1)[0]} & set(args.only)]
        by_level: dict[Path, list[Path]] = {}
        for path in files:
            by_level.setdefault(path.parent, []).append(path)
        return [path for level in by_level.values() for path in level[: args.limit]]
    if trace_set.is_trace_set(root):  # FlashInfer-Bench's dataset layout: one problem a definition file
        files = trace_set.definition_files(root)
        return [f for f in files if not args.only or f.stem in set(args.only)][: args.limit]
    folders = sorted(problem_folders(root), key=_order)
    if args.only:
        folders = [f for f in folders if f.name in set(args.only)]
    return folders[: args.limit]


def _print(row: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(row), flush=True)
        return
    figures = f"{row['seconds']:8.1f} s {row['peak_mib']:7d} MiB" if "seconds" in row else ""
    perturbed = f" perturbed {row['perturbed']}" if "perturbed" in row else ""
    perturbed += f" (at scale {row['scale']:g})" if "scale" in row else ""
    print(f"{row['problem']:>6} {row['verdict']:<22}{perturbed} {figures} {row['reason'][:160]}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="?", default=None)
    parser.add_argument("--format", choices=["auto", *FORMATS], default="auto", help="auto: told from the folder")
    parser.add_argument("--limit", type=int, default=None, help="the first N problems only (KernelBench: per level)")
    parser.add_argument("--only", nargs="*", default=None, help="these problem folder names (or file numbers) only")
    parser.add_argument("--cases", type=int, default=1, help="cases run per problem folder (the first ones)")
    parser.add_argument(
        "--pick", choices=["first", "smallest"], default="first", help="problem folders: which --cases cases run"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=None, help="seconds a run may take (120; KernelBench 300)")
    parser.add_argument("--memory-mb", type=int, default=8192)
    parser.add_argument("--levels", nargs="+", default=["level1", "level2"], help="KernelBench levels run")
    parser.add_argument("--scale", type=float, default=0.05, help="KernelBench sizes scaled by this (CPU smoke run)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--load-only", action="store_true", help="read, build records and import; run nothing")
    parser.add_argument(
        "--perturbed", action="store_true", help="problem folders: also run a copy with moved outputs (must fail)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object a problem")
    parser.add_argument(
        "--blob-root",
        default=None,
        help="where safetensors paths start (a trace set: its root; else $KERNELINDEX_BLOB_ROOT)",
    )
    args = parser.parse_args()
    given = args.problems or os.environ.get(
        "KERNELBENCH_DIR" if args.format == "kernelbench" else "KERNELINDEX_UPSTREAM_PROBLEMS"
    )
    if not given or not Path(given).is_dir():
        print(
            f"skipped: no folder of upstream problems ({given or 'none given'}; pass one or set "
            "KERNELINDEX_UPSTREAM_PROBLEMS, or KERNELBENCH_DIR with --format kernelbench)"
        )
        return 0
    root = Path(given)
    if args.blob_root is None and trace_set.is_trace_set(root):
        args.blob_root = str(root)
    if args.format == "auto":
        args.format = detect(root)
    problems = _problems(root, args)
    totals: Counter = Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelindex-conformance-") as tmp:
        store = open_store(str(Path(tmp) / "scratch.db"))  # each folder imported as `kernelindex import` does
        for problem in problems:
            if args.format == "kernelbench":
                row = run_kernelbench(problem, args, Path(tmp))
            else:
                row = run_folder(problem, args, Path(tmp), store)
            totals["accepted" if row["accepted"] else "refused"] += 1
            totals[row["verdict"]] += 1
            _print(row, args.json)
        store.close()
    print(
        f"{len(problems)} problems in {time.perf_counter() - started:.0f} s: "
        + ", ".join(f"{k} {v}" for k, v in sorted(totals.items()))
    )
    conforming = sum(totals[v] for v in ("PASSED", "LOADED", "REFUSED_UP_FRONT", "NEEDS_GPU", "NEEDS_MEMORY"))
    return 0 if totals["refused"] == 0 and conforming == len(problems) else 1


if __name__ == "__main__":
    sys.exit(main())
