"""`kernelindex demo`: the main job: import the sample (and the export beside the checkout), rerun, serve."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from kernelindex.cli import evaluate as eval_cli
from kernelindex.cli import imports
from kernelindex.cli import serve as serve_cli
from kernelindex.cli.common import Db, fail, open_store_or_fail


def demo(
    db: Db = None,
    catalog: list[str] = typer.Option(
        None, "--catalog", help="catalog export(s) to import too; default: ../shared/data/*.jsonl.zst when present"
    ),
    export: bool = typer.Option(True, "--export/--no-export", help="import the catalog export(s) at all"),
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: serve_cli.Port = 8000,
    serve: bool = typer.Option(True, "--serve/--no-serve", help="start the web site after importing"),
    verify_ours: bool = typer.Option(
        True, "--eval/--no-eval", help="also rerun our 042 kernel on its three smallest cases and store verified runs"
    ),
) -> None:
    """The main job: import the built-in sample (and the real export beside the checkout) and serve it."""
    from kernelindex.sample import default_catalogs, sample_paths

    if serve:  # a second demo while one serves: say so before importing or rerunning anything
        serve_cli.check_port_free(host, port)
    exports = (list(map(Path, catalog)) if catalog else default_catalogs()) if export else []
    paths = [*sample_paths(), *exports]
    for path in paths:
        typer.echo(f"importing {path}", err=True)
    imports.import_command(paths=paths, db=db, as_json=False, problem=None, solution=None)
    if verify_ours:
        _demo_rerun(db)
    if serve:  # a fresh `kernelindex serve`: what the import and the rerun loaded (torch), and their threads, stay here
        argv = [sys.executable, "-m", "kernelindex.cli", "serve", "--host", host, f"--port={port}"]
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, argv + (["--db", db] if db is not None else []))


DEMO_CASES = ["60b6e5ee", "21f99877", "30d53ea4"]  # 042's three smallest cases (S = 2048, 2080, 2112)


def _demo_rerun(db: str | None) -> None:
    """A short controlled rerun, so the demo shows verified evidence beside the reported runs."""
    from kernelindex.formats.problem import load_problem
    from kernelindex.formats.solution import load_solution
    from kernelindex.harness.runner import EvalOptions, evaluate
    from kernelindex.kernels import LOAD_BALANCE_BWD as solution_path
    from kernelindex.problems import LOAD_BALANCE_BWD as problem_path

    problem, solution = load_problem(problem_path), load_solution(solution_path)
    options = EvalOptions(device="cpu", rounds=3, warmup=5, iterations=20, cases=DEMO_CASES)
    try:
        suite = evaluate(problem, solution, options, progress=eval_cli.progress_printer())
    except RuntimeError as exc:  # no room for a case, the files changed under the run: said, not a traceback
        fail(str(exc))
    summary = eval_cli.record_suite(open_store_or_fail(db, create=True), suite)
    typer.echo(
        f"controlled rerun: {sum(r.passed for r in suite.cases)}/{len(suite.cases)} cases passed; {summary}", err=True
    )
