"""The `kernelindex` command line: one Typer app over the same core the web site uses."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from kernelindex import cli_evidence, cli_store, cli_web

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)


@app.callback()
def _commands() -> None:
    """Keeps `kernelindex COMMAND` form even while only one command is registered."""


def schemas(outdir: str = typer.Argument(..., help="folder for one <kind>.v1alpha1.schema.json per kind")) -> None:
    """Write the JSON Schema (Draft 2020-12) of every record kind, one file per kind."""
    import json

    from kernelindex.records.json_schema import kind_schema, schema_file_name
    from kernelindex.records.models import KINDS

    folder = Path(outdir)
    folder.mkdir(parents=True, exist_ok=True)
    for kind in sorted(KINDS):
        model = KINDS[kind]
        path = folder / schema_file_name(model)
        path.write_text(json.dumps(kind_schema(model), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        typer.echo(f"{kind}: {path}")


def eval_command(
    problem: str = typer.Argument(..., help="problem folder (definition.json + workload.jsonl)"),
    solution: str = typer.Option(..., "--solution", "-s", help="solution.json"),
    cases: list[str] = typer.Option(None, "--cases", help="case uuids (or prefixes) to run; all when absent"),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda[:N]"),
    output: str = typer.Option(None, "-o", "--output", help="write upstream-format trace lines here"),
    record: bool = typer.Option(False, "--record", help="store the records (evidence: verified) in the store"),
    db: str = typer.Option(None, "--db", help="database URL or SQLite file, for --record"),
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
        private_key = _runner_key(key) if record and key else None
        store = cli_store._open(db) if record else None  # noqa: SLF001 (the one store opener with clear errors)
    except (FormatError, KeyError) as exc:
        err.print(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", markup=False)
        raise typer.Exit(1)
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
    if record:
        Console().print(_record(store, suite, private_key), markup=False)
    raise typer.Exit(0 if all(r.passed for r in suite.cases) else 1)


def _record(store, suite, private_key=None) -> str:
    """Store an evaluation as verified runs, append the leader changes it caused, and say what was stored."""
    from kernelindex.harness.records import record_evaluation
    from kernelindex.ranking.leaders import record_leader_changes

    stored = record_evaluation(store, suite, private_key=private_key)
    with store.begin() as conn:
        leaders = record_leader_changes(conn)
    new = sum(1 for v in stored.run_ids.values() if v)
    return (f"stored {new} new run(s) as verified evidence ({len(leaders)} comparison group(s) with a new leader); "
            f"suite run {stored.suite_run_digest}")


def _runner_key(path: str):
    """The Ed25519 private key at ``path``; a FormatError naming the file if it cannot be used."""
    from kernelindex.harness.formats import FormatError
    from kernelindex.records.signing import SignatureError, private_key_from_pem

    try:
        return private_key_from_pem(Path(path).read_bytes())
    except (OSError, SignatureError) as exc:
        raise FormatError(path, None, "--key", exc.strerror if isinstance(exc, OSError) else str(exc)) from None


def demo(
    db: str = typer.Option(None, "--db", help="database URL or SQLite file (default ./kernelindex.db)"),
    catalog: list[str] = typer.Option(
        None, "--catalog", help="catalog export(s) to import too; default: ../shared/data/*.jsonl.zst when present"),
    export: bool = typer.Option(True, "--export/--no-export", help="import the catalog export(s) at all"),
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8000, help="port to listen on"),
    serve: bool = typer.Option(True, "--serve/--no-serve", help="start the web site after importing"),
    verify_ours: bool = typer.Option(
        True, "--eval/--no-eval", help="also rerun our 042 kernel on its three smallest cases and store verified runs"),
) -> None:
    """The main job: import the built-in sample (and the real export beside the checkout) and serve it."""
    from kernelindex.sample import default_catalogs, sample_paths

    exports = (list(map(Path, catalog)) if catalog else default_catalogs()) if export else []
    paths = [*sample_paths(), *exports]
    for path in paths:
        typer.echo(f"importing {path}", err=True)
    cli_store.import_command(paths=paths, db=db, as_json=False, problem=None, solution=None)
    if verify_ours:
        _demo_rerun(db)
    if serve:
        cli_web.serve(db=db, host=host, port=port)


DEMO_CASES = ["60b6e5ee", "21f99877", "30d53ea4"]  # 042's three smallest cases (S = 2048, 2080, 2112)


def _demo_rerun(db: str | None) -> None:
    """A short controlled rerun, so the demo shows verified evidence beside the reported runs."""
    from kernelindex.harness.formats import load_problem, load_solution
    from kernelindex.harness.runner import EvalOptions, evaluate
    from kernelindex.kernels import LOAD_BALANCE_BWD as solution_path
    from kernelindex.problems import LOAD_BALANCE_BWD as problem_path
    from kernelindex.store import open_store

    problem, solution = load_problem(problem_path), load_solution(solution_path)
    options = EvalOptions(device="cpu", rounds=3, warmup=5, iterations=20, cases=DEMO_CASES)
    suite = evaluate(problem, solution, options,
                     progress=lambda r: typer.echo(f"rerun {r.case.uuid[:8]}: {r.status}", err=True))
    summary = _record(open_store(db), suite)
    typer.echo(f"controlled rerun: {sum(r.passed for r in suite.cases)}/{len(suite.cases)} cases passed; {summary}",
               err=True)


# Commands in the order a newcomer meets them: the demo, the store, the site, reruns, evidence.
app.command("demo")(demo)
cli_store.register(app)  # import, verify, runs, show, export, stats
cli_web.register(app)  # serve, rank
app.command("eval")(eval_command)
cli_evidence.register(app)  # keys, corrections, sign, attest, verify-signatures
app.command("schemas")(schemas)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
