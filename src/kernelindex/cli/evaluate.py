"""`kernelindex eval`: a controlled rerun of a solution on a problem, optionally recorded as verified runs."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from kernelindex.cli.common import Db, load_private_key, open_store_or_fail


def eval_command(
    problem: str = typer.Argument(..., help="problem folder (definition.json + workload.jsonl)"),
    solution: str = typer.Option(..., "--solution", "-s", help="solution.json"),
    cases: list[str] = typer.Option(
        None, "--cases", help="case uuids (or prefixes) to run: --cases 60b6e5ee 21f99877 (or a,b); all when absent"),
    more_cases: list[str] = typer.Argument(None, hidden=True, help="further case ids after --cases"),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda[:N]"),
    output: str = typer.Option(None, "-o", "--output", help="write upstream-format trace lines here"),
    keep: bool = typer.Option(False, "--record", help="store the records (evidence: verified) in the store"),
    db: Db = None,
    key: str = typer.Option(None, "--key", help="runner's Ed25519 private key (PEM) to sign the stored runs"),
    rounds: int = typer.Option(10, min=1, help="correctness rounds with fresh inputs"),
    warmup: int = typer.Option(10, min=0, help="warm-up calls"),
    iterations: int = typer.Option(50, min=1, help="timed calls"),
    timeout: float = typer.Option(300.0, min=0.1, help="seconds per case and process"),
    memory_mb: int = typer.Option(16384, "--memory-mb", min=64, help="memory limit of each worker process"),
) -> None:
    """Run a solution on a problem in isolated processes; print a table; exit 0 only if every case passed."""
    from rich.console import Console

    from kernelindex.harness.formats import FormatError, load_problem, load_solution
    from kernelindex.harness.report import render
    from kernelindex.harness.runner import EvalOptions, evaluate, write_traces

    err = Console(stderr=True, highlight=False, soft_wrap=True)  # an error stays one line, whatever the width
    if more_cases and not cases:
        err.print(f"error: unexpected argument(s) {' '.join(more_cases)}: case ids go after --cases", markup=False)
        raise typer.Exit(2)
    # "--cases a b" and "--cases a,b" both mean two cases; an empty value stays, to be refused below
    cases = [c for text in [*(cases or []), *(more_cases or [])] for c in (text.replace(",", " ").split() or [text])]
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        err.print(f"error: --device must be cpu or cuda[:N], not {device!r}", markup=False)
        raise typer.Exit(2)
    try:
        loaded_problem, loaded_solution = load_problem(problem), load_solution(solution)
        options = EvalOptions(device=device, rounds=rounds, warmup=warmup, iterations=iterations, timeout_s=timeout,
                              memory_limit_mb=memory_mb, cases=cases or None)
        if options.cases:
            for uuid in options.cases:
                loaded_problem.case(uuid)
        # everything that could fail after the (long) evaluation is checked before it starts
        if output and (Path(output).is_dir() or not Path(output).resolve().parent.is_dir()):
            raise FormatError(output, None, "--output", "is a folder, or its folder does not exist")
        private_key = load_private_key(key) if keep and key else None
        store = open_store_or_fail(db, create=True) if keep else None
    except (FormatError, KeyError) as exc:
        err.print(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", markup=False)
        raise typer.Exit(1) from None
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            err.print("error: --device cuda, but this machine has no usable GPU", markup=False)
            raise typer.Exit(1)
        if int(device.partition(":")[2] or 0) >= torch.cuda.device_count():
            err.print(f"error: --device {device}: this machine has {torch.cuda.device_count()} GPU(s)", markup=False)
            raise typer.Exit(1)
    suite = evaluate(loaded_problem, loaded_solution, options,
                     progress=lambda r: err.print(f"{r.case.uuid[:8]} {r.status}", markup=False))
    render(suite, Console())
    if output:
        write_traces(suite, output)
    if keep:
        Console().print(record(store, suite, private_key), markup=False)
    raise typer.Exit(0 if all(r.passed for r in suite.cases) else 1)


def record(store, suite, private_key=None) -> str:
    """Store an evaluation as verified runs, append the leader changes it caused, and say what was stored."""
    from kernelindex.harness.records import record_evaluation
    from kernelindex.ranking.leaders import record_leader_changes

    stored = record_evaluation(store, suite, private_key=private_key)
    with store.begin() as conn:
        leaders = record_leader_changes(conn)
    new = sum(1 for v in stored.run_ids.values() if v)
    return (f"stored {new} new run(s) as verified evidence ({len(leaders)} comparison group(s) with a new leader); "
            f"suite run {stored.suite_run_digest}")
