"""`kernelindex campaign`: verify many solutions on many problems across a Ray cluster."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelindex.cli.common import (
    BlobRoot,
    Cases,
    Db,
    MemoryMb,
    Timeout,
    case_list,
    fail,
    id_column,
    load_private_key,
    open_store_or_fail,
    out_console,
    problem_folder,
    progress,
)


def campaign_command(
    problems: list[str] = typer.Argument(..., help="problem folders or shipped pack names"),
    solutions: list[Path] = typer.Option(
        ...,
        "--solutions",
        "-s",
        help="solution.json files or folders of them (their *.json and */solution.json); each runs on its problem, "
        "all of one problem's in one harness call per batch of cases (--solutions kernels/*/solution.json works)",
    ),
    ray_address: str = typer.Option(
        None,
        "--ray-address",
        help="a Ray cluster: auto, or ray://host:10001 (needs ray[client]); default: start a local Ray with 2 CPUs",
    ),
    hardware: str = typer.Option("cpu", "--hardware", help="cpu, or the GPU product the tasks need"),
    batch: int = typer.Option(4, "--batch", min=1, max=10_000, help="cases per Ray task"),
    rounds: int = typer.Option(10, min=1, max=100, help="correctness rounds with fresh inputs"),
    warmup: int = typer.Option(10, min=0, max=1000, help="warm-up calls"),
    iterations: int = typer.Option(50, min=1, max=10_000, help="timed calls"),
    timeout: Timeout = 300.0,
    key: Path = typer.Option(None, "--key", help="Ed25519 private key to sign the stored runs"),
    sandbox: str = typer.Option(
        "required", "--sandbox", help="required (refuse to start without it), auto (unverified runs then), or off"
    ),
    memory_mb: MemoryMb = 16384,
    only_cases: Cases = None,
    blob_root: BlobRoot = None,
    db: Db = None,
) -> None:
    """Run every (problem, solution) whose definitions agree as Ray tasks; store the verified runs; print a summary."""
    from rich.table import Table
    from rich.text import Text

    from kernelindex.cli.evaluate import solution_files
    from kernelindex.services import harness_adapter as harness
    from kernelindex.services.campaign import Pair, RayUnavailable, run_campaign, start_ray
    from kernelindex.services.queue import hardware_name

    # `--solutions a.json b.json` (a shell glob) leaves b.json among the positional arguments; a problem
    # is a folder or a pack name, never a file, so every file there is one more solution.
    solutions = [*solutions, *(Path(p) for p in problems if Path(p).is_file())]
    problems = [p for p in problems if not Path(p).is_file()]
    if not problems:
        fail("no problem given: name problem folders or pack names (the solutions go after --solutions)")
    refusal = harness.sandbox_refusal(sandbox)
    if refusal:
        fail(refusal)
    loaded: dict[str, tuple[dict[str, str], list[str]]] = {}
    try:
        for problem in problems:
            files = harness.problem_files(problem_folder(problem))
            name, cases = harness.problem_summary(files)
            loaded[name] = (files, cases)
        solutions = solution_files([str(path) for path in solutions])
        documents = [harness.inline_solution(path) for path in solutions]
        hardware = hardware_name(hardware)
    except (harness.FormatError, ValueError) as exc:
        fail(str(exc))
    wanted = case_list(only_cases)
    if wanted:
        loaded = _keep_cases(loaded, wanted)
    pairs = [
        Pair(loaded[doc["definition"]][0], doc, loaded[doc["definition"]][1], f"{doc['name']} on {doc['definition']}")
        for doc in documents
        if doc["definition"] in loaded
    ]
    unmatched = [str(path) for path, doc in zip(solutions, documents) if doc["definition"] not in loaded]
    if unmatched:
        fail([f"{path}: its definition is none of the given problems" for path in unmatched])
    private_key = load_private_key(key) if key else None
    store = open_store_or_fail(db, create=True)
    protocol = {
        "rounds": rounds,
        "warmup": warmup,
        "iterations": iterations,
        "timeout_s": timeout,
        "sandbox": sandbox,
        "memory_mb": memory_mb,
        "blob_root": blob_root,  # None: each worker's KERNELINDEX_BLOB_ROOT
    }

    def store_pair(pair: Pair, suite) -> None:  # the driver is the one writer
        pair.stored = harness.record(store, suite, private_key=private_key)
        pair.parts = [suite]

    try:
        start_ray(ray_address, hardware)
    except RayUnavailable as exc:
        fail(f"--ray-address: {exc}")
    total = sum(len(pair.cases) for pair in pairs)
    with progress() as bar:
        task = bar.add_task(f"campaign: {len(pairs)} pair(s) on Ray", total=total)
        run_campaign(
            pairs,
            hardware=hardware,
            protocol=protocol,
            batch_size=batch,
            store_pair=store_pair,
            advance=lambda n: bar.advance(task, n),
        )
    table = Table("solution", "problem", "cases", "passed", "geomean latency ms", "evidence")
    id_column(table, "suite run / failure")
    for pair in pairs:
        suite = pair.parts[0] if pair.stored else None
        evidence = (
            "—" if not suite else "verified" if suite.sandboxed else f"not verified: no sandbox ({suite.sandbox_note})"
        )
        table.add_row(
            Text(str(pair.solution["name"])),  # a name is text, never Rich markup
            Text(str(pair.solution["definition"])[:40]),
            str(len(pair.cases)),
            str(sum(c.passed for c in suite.cases)) if suite else "—",
            f"{suite.score.geomean_latency_ms:.4f}" if suite and suite.score.geomean_latency_ms else "—",
            Text(evidence),
            Text(pair.stored[0] if pair.stored else (pair.failure or "not stored")),
        )
    out_console().print(table, markup=False)
    ok = all(pair.stored and all(c.passed for c in pair.parts[0].cases) for pair in pairs)
    raise typer.Exit(0 if ok else 1)


def _keep_cases(
    loaded: dict[str, tuple[dict[str, str], list[str]]], wanted: list[str]
) -> dict[str, tuple[dict[str, str], list[str]]]:
    """Each problem's cases that ``--cases`` names (uuids or prefixes); refused when one names no case
    of any problem, or a problem is left with none."""
    kept = {
        name: (files, [c for c in cases if any(c.startswith(w) for w in wanted)])
        for name, (files, cases) in loaded.items()
    }
    unused = [w for w in wanted if not any(c.startswith(w) for _, cases in loaded.values() for c in cases)]
    empty = [name for name, (_, cases) in kept.items() if not cases]
    if unused or empty:
        fail(
            [f"--cases {w}: no case of the given problems starts with it" for w in unused]
            + [f"--cases names no case of {name}" for name in empty]
        )
    return kept
