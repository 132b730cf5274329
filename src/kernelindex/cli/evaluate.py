"""`kernelindex eval`: a controlled rerun of a solution on a problem, optionally recorded as verified runs."""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kernelindex.cli.common import (
    BlobRoot,
    Db,
    MemoryMb,
    Timeout,
    load_private_key,
    open_store_or_fail,
    out_console,
    problem_folder,
)

if TYPE_CHECKING:  # rich is imported when a bar is shown
    from rich.progress import TaskID


def eval_command(
    problem: str = typer.Argument(
        ...,
        help="problem folder (definition.json + workload.jsonl) or a shipped pack's name (as `kernelindex cases` "
        "takes it), a definition .json in a FlashInfer-Bench trace set, or a KernelBench .py",
    ),
    solution: list[str] = typer.Option(
        ...,
        "--solution",
        "-s",
        help="solution.json (repeat for several: one call runs the reference once per case for all of them, each "
        "in sandboxes of its own, recorded apart), a folder of them (its *.json and */solution.json), or a "
        "KernelBench ModelNew .py",
    ),
    cases: list[str] = typer.Option(
        None, "--cases", help="case uuids (or prefixes) to run: --cases 60b6e5ee 21f99877 (or a,b); all when absent"
    ),
    more_cases: list[str] = typer.Argument(None, hidden=True, help="further case ids after --cases"),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda[:N]"),
    output: str = typer.Option(None, "-o", "--output", help="write upstream-format trace lines here"),
    keep: bool = typer.Option(False, "--record", help="store the records (evidence: verified) in the store"),
    db: Db = None,
    key: str = typer.Option(None, "--key", help="runner's Ed25519 private key (PEM) to sign the stored runs"),
    rounds: int = typer.Option(
        None, min=1, max=100, help="correctness rounds with fresh inputs [10; KernelBench: its 5 trials]"
    ),
    scale: float = typer.Option(
        1.0, "--scale", help="KernelBench: scale its module-level sizes (0 < s <= 1) for a smoke run"
    ),
    warmup: int = typer.Option(10, min=0, max=1000, help="warm-up calls"),
    iterations: int = typer.Option(50, min=1, max=10_000, help="timed calls"),
    timeout: Timeout = 300.0,
    memory_mb: MemoryMb = 16384,
    host_memory: float = typer.Option(
        None,
        "--host-memory-gib",
        min=0.5,
        help="host memory this evaluation may take, its processes included (a shared machine's share); "
        "the plan fits within it and within what the machine has available [what it has available]",
    ),
    pairs: int = typer.Option(
        10, min=1, max=1000, help="paired batches of timed calls (reference and solution interleaved)"
    ),
    sandbox: str = typer.Option("auto", help="auto (bubblewrap when it works), required, or off (then: reproducible)"),
    blob_root: BlobRoot = None,
    plan: bool = typer.Option(
        False, "--plan", help="print each case's memory plan (slots, rounds at a time, GiB) and exit without running"
    ),
) -> None:
    """Run a solution on a problem in isolated processes; print a table; exit 0 only if every case passed."""
    from rich.console import Console

    from kernelindex.formats.errors import FormatError
    from kernelindex.formats.problem import load_problem
    from kernelindex.formats.solution import load_solution
    from kernelindex.harness import trace_sets
    from kernelindex.harness.report import render
    from kernelindex.harness.runner import EvalOptions

    err = Console(stderr=True, highlight=False, soft_wrap=True)  # an error stays one line, whatever the width
    if more_cases and not cases:
        err.print(f"error: unexpected argument(s) {' '.join(more_cases)}: case ids go after --cases", markup=False)
        raise typer.Exit(2)
    # "--cases a b" and "--cases a,b" both mean two cases; an empty value stays, to be refused below
    cases = [c for text in [*(cases or []), *(more_cases or [])] for c in (text.replace(",", " ").split() or [text])]
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        err.print(f"error: --device must be cpu or cuda[:N], not {device!r}", markup=False)
        raise typer.Exit(2)
    if sandbox not in ("auto", "required", "off"):
        err.print(f"error: --sandbox must be auto, required or off, not {sandbox!r}", markup=False)
        raise typer.Exit(2)
    kernelbench = problem.endswith(".py") and Path(problem).is_file()
    if kernelbench and len(solution) != 1:
        err.print("error: a KernelBench problem takes one --solution (its ModelNew .py)", markup=False)
        raise typer.Exit(2)
    in_trace_set = not kernelbench and problem.endswith(".json") and Path(problem).is_file()
    scratch = tempfile.TemporaryDirectory(prefix="kernelindex-problem-") if kernelbench or in_trace_set else None
    rule = ""
    try:
        if kernelbench:
            assert scratch is not None
            loaded_problem, one, rule, rounds = _kernelbench(problem, solution[0], scratch.name, scale, device, rounds)
            candidates = [one]
        else:
            if in_trace_set:  # its definition and workload lines as a problem folder; blobs from the set's root
                assert scratch is not None
                folder, root = trace_sets.problem_folder(Path(problem), Path(scratch.name))
                problem, blob_root = str(folder), blob_root or str(root)
            loaded_problem = load_problem(problem if in_trace_set else problem_folder(problem))
            candidates = [load_solution(path) for path in solution_files(solution)]
        for warning in loaded_problem.warnings:
            err.print(f"warning: {warning}", markup=False)
        options = EvalOptions(
            device=device,
            rounds=rounds or 10,
            rule=rule,
            warmup=warmup,
            iterations=iterations,
            timeout_s=timeout,
            memory_limit_mb=memory_mb,
            memory_budget_bytes=int(host_memory * (1 << 30)) if host_memory else None,
            cases=cases or None,
            pairs=pairs,
            sandbox=sandbox,
            blob_root=blob_root,
        )
        if options.cases:
            for uuid in options.cases:
                loaded_problem.case(uuid)
        # everything that could fail after the (long) evaluation is checked before it starts
        if output and (Path(output).is_dir() or not Path(output).resolve().parent.is_dir()):
            raise FormatError(output, None, "--output", "is a folder, or its folder does not exist")
        private_key = load_private_key(key) if keep and key else None
        store = open_store_or_fail(db, create=True) if keep else None
    except (FormatError, KeyError, ValueError) as exc:  # ValueError: a KernelBench problem too large, a bad --scale
        err.print(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", markup=False)
        raise typer.Exit(1) from None
    _plan(loaded_problem, options, err, plan)
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            err.print("error: --device cuda, but this machine has no usable GPU", markup=False)
            raise typer.Exit(1)
        if int(device.partition(":")[2] or 0) >= torch.cuda.device_count():
            err.print(f"error: --device {device}: this machine has {torch.cuda.device_count()} GPU(s)", markup=False)
            raise typer.Exit(1)
    try:
        done = _run_candidates(loaded_problem, candidates, options, output, (store, private_key), err)
    finally:
        if scratch is not None:
            scratch.cleanup()
    for suite, stored in done:
        if not suite.sandboxed:
            err.print(
                f"warning: no sandbox ({suite.sandbox_note}): these runs are reproducible, not verified", markup=False
            )
        render(suite, out_console())
        if stored:
            out_console().print(stored, markup=False)
    raise typer.Exit(0 if all(r.passed for suite, _ in done for r in suite.cases) else 1)


def _run_candidates(problem, candidates: list, options, output: str | None, recording: tuple, err) -> list[tuple]:
    """Evaluate the candidates in one call (`runner.evaluate_many`: the reference's process, snapshot and
    checked rounds shared, each candidate in sandboxes of its own); then write and record each suite
    apart, before anything of it is shown, so nothing a solution names itself can lose it.
    [(suite, what was stored)]"""
    from kernelindex.harness.runner import evaluate_many, write_traces

    store, private_key = recording
    try:
        with EvalProgress(err, len(candidates), len(options.cases or problem.cases)) as shown:
            suites = evaluate_many(problem, candidates, options, progress=shown.update)
    except RuntimeError as exc:  # sandbox "required" and none can be made, a case too big, a blob missing
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from None
    done = []
    for index, suite in enumerate(suites):
        if output:
            write_traces(suite, output, append=index > 0)
        done.append((suite, record_suite(store, suite, private_key) if store is not None else None))
    return done


def _plan(problem, options, err, only: bool) -> None:
    """--plan: every case's figures, then exit (1: some case cannot fit); a CPU run: one line when some
    case gets fewer slots (a run that cannot fit is refused by the harness itself)."""
    if only or not options.device.startswith("cuda"):
        fits = show_plan(problem, options, err, every_case=only)
        if only:
            raise typer.Exit(0 if fits else 1)


def show_plan(problem, options, err, every_case: bool) -> bool:
    """Say how the cases fit this machine's memory (every case's figures with ``every_case``, else one line
    and only when some case gets fewer slots than it wants); False when some case cannot fit."""
    from kernelindex.harness import memory
    from kernelindex.harness.runner import memory_plan

    try:
        fitted = memory_plan(problem, options, memory.available_bytes())
    except memory.DoesNotFit as exc:
        if every_case:
            err.print(f"does not fit: {exc}", markup=False)
        return False
    gib = lambda n: f"{n / memory.GIB:.2f} GiB"  # noqa: E731
    budget = f"of {gib(fitted.budget)} for buffers" if fitted.budget is not None else "(not checked)"
    if every_case:
        for uuid, layout in fitted.layouts.items():
            streamed = min(options.rounds, layout.slots)
            few = (
                f", timed in {options.pairs_for(layout.slots)} pairs of {layout.slots}"
                if layout.slots < options.batch
                else ""
            )
            err.print(
                f"{uuid[:8]}  {layout.slots:3d}/{fitted.wanted[uuid]:3d} slots of {layout.slot_bytes / (1 << 20):.1f} MiB, "
                f"rounds {streamed} at a time{few}, {gib(fitted.need(uuid))}",
                markup=False,
            )
    if every_case or fitted.fitted:
        err.print(
            f"memory plan: peak {gib(fitted.peak)} (reference arena {gib(fitted.reference_bytes)}) {budget}, "
            f"plus ~{gib(memory.PROCESSES * memory.PROCESS_BYTES)} for the processes; "
            f"{len(fitted.fitted)} of {len(fitted.layouts)} case(s) on fewer slots than they want",
            markup=False,
        )
    return True


def solution_files(given: list[str]) -> list[Path]:
    """Each --solution as files: a file as it is, a folder as its *.json and */solution.json (sorted);
    a folder with none is refused, naming it."""
    from kernelindex.formats.errors import FormatError

    files: list[Path] = []
    for text in given:
        path = Path(text)
        if not path.is_dir():
            files.append(path)
            continue
        found = sorted(path.glob("*.json")) + sorted(path.glob("*/solution.json"))
        if not found:
            raise FormatError(text, None, "--solution", "is a folder with no *.json nor */solution.json in it")
        files += found
    return files


def _kernelbench(problem: str, solution: str, folder: str, scale: float, device: str, rounds: int | None):
    """A KernelBench problem file and ModelNew file as a problem and solution the runner takes (written
    into ``folder``), the judge's rule for the protocol and its number of correctness trials."""
    from rich.console import Console

    from kernelindex.harness import kernelbench, kernelbench_judge

    rounds = rounds or kernelbench_judge.TRIALS
    prepared = kernelbench.prepare(problem, solution, folder, scale=scale, device=device, rounds=rounds)
    if prepared.file.scale != scale:
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"note: Model fails at its sizes scaled by {scale:g}; run at scale {prepared.file.scale:g}", markup=False
        )
    rule = kernelbench_judge.describe(prepared.precision, rounds)
    return prepared.problem, prepared.solution, rule, rounds


def record_suite(store, suite, private_key=None) -> str:
    """Store an evaluation, sign its runs and append the leader changes it caused, in one
    transaction (the services' use case); say what was stored."""
    from kernelindex.services.evaluations import record_evaluation

    recorded = record_evaluation(store, suite, private_key=private_key)
    return (
        f"stored {recorded.new_runs} new run(s) as {recorded.level} evidence ({len(recorded.leader_events)} "
        f"comparison group(s) with a new leader); suite run {recorded.stored.suite_run_digest}"
    )


class EvalProgress:
    """A Rich progress bar per case: phase, calls or pairs done, and an estimate once timing has begun.
    With several solutions, one bar over candidates x cases that counts the verdicts, and only the
    running case's bar beside it (a finished one is removed: fifty candidates make no hundred bars).
    Where the console is no terminal (a log file, a pipe) a bar would show nothing until the end, so each
    step inside a case is a line of its own instead."""

    def __init__(self, console, candidates: int = 1, cases: int = 0):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = console
        self.lines = not console.is_terminal
        self.started = time.monotonic()
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[eta]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=self.lines,
        )
        self.tasks: dict[tuple[int, str], TaskID] = {}
        self.candidates, self.title = candidates, f"{candidates} solutions x {cases} cases"
        self.verdicts: dict[str, int] = {}
        self.overall = self.bar.add_task(self.title, total=candidates * cases, eta="") if candidates > 1 else None

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)

    def update(self, event) -> None:
        label = f"case {event.case_number + 1}/{event.cases} {event.uuid[:8]}"
        if self.overall is not None:
            label = f"solution {event.solution + 1}/{self.candidates} {label}"
        verdict = event.result.status if event.phase == "done" and event.result else ""
        if event.phase == "done" and self.overall is not None:
            self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
        if self.lines:
            self._line(label, event)
            return
        key = (event.solution, event.uuid)
        if key not in self.tasks:
            self.tasks[key] = self.bar.add_task(label, total=event.total, eta="")
        task = self.tasks[key]
        if event.phase == "done":
            if self.overall is None:
                self.bar.update(task, description=f"{label} {verdict}", completed=1, total=1, eta="")
                return
            self.bar.remove_task(task)
            self.bar.update(self.overall, description=self._tally(), advance=1)
            return
        eta = f"~{event.eta_s:.0f}s left" if event.eta_s is not None else ""
        self.bar.update(
            task, description=f"{label} {event.phase}", completed=event.done, total=max(1, event.total), eta=eta
        )

    def _tally(self) -> str:
        """The overall line: how many of candidates x cases ended in each verdict so far."""
        return f"{self.title}: " + ", ".join(f"{n} {name}" for name, n in sorted(self.verdicts.items()))

    def _line(self, label: str, event) -> None:
        if event.phase == "done":
            step = event.result.status if event.result else "done"
            step += f" ({self._tally()})" if self.overall is not None else ""
        else:
            step = f"{event.phase} {event.done}/{event.total}" if event.total > 1 else event.phase
            step += f", ~{event.eta_s:.0f}s left" if event.eta_s is not None else ""
            step += f", {event.note}" if event.note else ""
        self.console.print(f"[{time.monotonic() - self.started:6.0f}s] {label} {step}", markup=False, highlight=False)


def progress_printer():
    """A plain progress callback: one line per finished case."""

    def show(event) -> None:
        if event.phase == "done" and event.result is not None:
            typer.echo(f"rerun {event.uuid[:8]}: {event.result.status}", err=True)

    return show
