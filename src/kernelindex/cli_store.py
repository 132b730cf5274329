"""CLI commands over the store: import, verify, runs, show, export, stats.

Each command takes ``--db URL`` (or a SQLite path); without it $KERNELINDEX_DATABASE_URL, then
``./kernelindex.db``. Errors are one line each on stderr and exit 1 (2 for usage errors, from
Typer). Heavy modules are imported inside the commands so ``kernelindex --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

Db = Annotated[
    str | None,
    typer.Option("--db", help="database URL or SQLite file (default: $KERNELINDEX_DATABASE_URL, else ./kernelindex.db)"),
]
AsJson = Annotated[bool, typer.Option("--json", help="machine-readable JSON on stdout")]
MAX_SHOWN_PROBLEMS = 20


def _stderr():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(lines: list[str], code: int = 1) -> NoReturn:
    err = _stderr()
    for line in lines[:MAX_SHOWN_PROBLEMS]:
        err.print(f"error: {line}", markup=False)
    if len(lines) > MAX_SHOWN_PROBLEMS:
        err.print(f"error: ... and {len(lines) - MAX_SHOWN_PROBLEMS} more problems", markup=False)
    raise typer.Exit(code)


def _open(db: str | None):
    from sqlalchemy.exc import SQLAlchemyError

    from kernelindex.store import open_store, resolve_url

    try:
        return open_store(db)
    except (SQLAlchemyError, OSError) as exc:
        _fail([f"cannot open the store at {resolve_url(db)}: {str(exc).splitlines()[0]}"])


def _progress():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = _stderr()
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True, disable=not err.is_terminal,
    )


def _number(value: float | int | None) -> str:
    """A stored value as written: 317881 rather than 317881.0, full precision otherwise."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def import_command(
    paths: Annotated[list[Path], typer.Argument(help="catalog .jsonl.zst/.jsonl, run bundle .json, folder of bundles, problem folder, trace .jsonl")],
    db: Db = None,
    as_json: AsJson = False,
    problem: Annotated[Path | None, typer.Option(
        "--problem", help="for trace files: the problem folder the traces were measured on")] = None,
    solution: Annotated[Path | None, typer.Option(
        "--solution", help="for trace files: the solution.json the traces measured")] = None,
) -> None:
    """Import files into the store: each file in one transaction, refused whole on any bad record."""
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn
    from sqlalchemy.exc import SQLAlchemyError

    from kernelindex.ingest.catalog import ImportReport
    from kernelindex.ingest.paths import import_paths, kind_of
    from kernelindex.ingest.problems import ImportFailed

    try:
        for path in paths:
            kind_of(path)  # refuse a bad path before anything is imported
    except ImportFailed as exc:
        _fail([str(p) for p in exc.problems])
    store = _open(db)
    err = _stderr()
    with Progress(*Progress.get_default_columns()[:3], DownloadColumn(), TransferSpeedColumn(), console=err, transient=True, disable=not err.is_terminal) as bar:
        def open_file(path: Path):
            return bar.open(path, "rb", description=f"importing {path.name}")

        try:
            reports = import_paths(store, paths, open_file=open_file, trace_problem=problem, trace_solution=solution)
        except ImportFailed as exc:
            _fail([str(p) for p in exc.problems])
        except SQLAlchemyError as exc:  # e.g. a concurrent import wrote the same rows first
            _fail([f"the database refused the import (nothing was stored): {str(exc).splitlines()[0]}"])
    from kernelindex.ranking.leaders import record_leader_changes

    with store.begin() as conn:
        leader_events = record_leader_changes(conn)
    summary = []
    for kind, report in reports:
        if not isinstance(report, ImportReport):
            summary.append({"kind": kind, "result": report})
            continue
        summary.append(
            {
                "kind": kind, "path": report.path, "lines": report.lines,
                "added": dict(report.added), "alreadyPresent": dict(report.present), "linked": dict(report.linked),
                "keptForeignTables": dict(report.foreign_tables), "unknownColumns": dict(report.unknown_columns),
            }
        )
    summary.append({"kind": "leader-changes", "result": f"{len(leader_events)} comparison group(s) with a new leader"})
    if as_json:
        _print_json(summary)
        return
    for item in summary:
        if "added" not in item:
            typer.echo(f"{item['kind']}: {item['result']}")
            continue
        added, present = sum(item["added"].values()), sum(item["alreadyPresent"].values())
        typer.echo(f"{item['path']}: {item['lines']} lines, {added} rows added, {present} already present")
        for name, label in (("keptForeignTables", "kept rows of unmodelled table"), ("unknownColumns", "unknown column kept")):
            for what, count in item[name].items():
                typer.echo(f"  {label} {what}: {count} rows")
        for what, count in item["linked"].items():
            typer.echo(f"  pending links filled ({what}): {count}")


def verify_command(
    db: Db = None,
    as_json: AsJson = False,
    signatures: Annotated[bool, typer.Option("--signatures", help="also re-check every stored signature, offline")] = False,
) -> None:
    """Recompute every stored digest and key; exit 1 on any mismatch."""
    from kernelindex.store.verify import count_records, verify_store

    store = _open(db)
    with _progress() as bar:
        task = bar.add_task("verifying", total=count_records(store))
        report = verify_store(store, on_record=lambda: bar.advance(task))
    from kernelindex.cli_evidence import check_signatures, signature_report  # evidence helper

    bad_signatures = 0
    if as_json:
        extra = {"signatures": signature_report(db)} if signatures else {}
        bad_signatures = len(extra["signatures"]["invalid"]) if signatures else 0
        _print_json({"checked": report.checked, "mismatches": [vars(m) for m in report.mismatches], **extra})
    else:
        typer.echo(report.summary())
        err = _stderr()
        for mismatch in report.mismatches[:MAX_SHOWN_PROBLEMS]:
            err.print(f"mismatch: {mismatch}", markup=False)
        bad_signatures = check_signatures(db) if signatures else 0
    if not report.ok or bad_signatures:
        raise typer.Exit(1)


def runs_command(
    operation: Annotated[str | None, typer.Option(help="operation slug, alias, name or digest prefix")] = None,
    workload: Annotated[str | None, typer.Option(help="workload id, name or digest prefix")] = None,
    source: Annotated[str | None, typer.Option(help="source slug, e.g. sol-execbench")] = None,
    hardware: Annotated[str | None, typer.Option(help="hardware model substring, architecture or vendor")] = None,
    status: Annotated[str | None, typer.Option(help="run status, e.g. passed")] = None,
    limit: Annotated[int, typer.Option(min=0, help="at most this many runs (0: all)")] = 50,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """List runs, filtered."""
    from kernelindex.ranking.evidence_facts import evidence_for_runs
    from kernelindex.store.queries import RunFilter, list_runs

    store = _open(db)
    with store.begin() as conn:
        rows = list_runs(conn, RunFilter(operation, workload, source, hardware, status, limit or None))
        levels = evidence_for_runs(conn, [r["run_digest"] for r in rows])
    for r in rows:
        r["evidence"] = levels[r["run_digest"]].level if r["run_digest"] in levels else None
    if as_json:
        _print_json(rows)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} runs")
    for column in ("digest", "operation", "workload", "source", "hardware", "status", "evidence", "primary"):
        table.add_column(column, overflow="fold")
    for r in rows:
        value = "" if r["primary_value"] is None else f"{r['primary_value']:.6g} {r['primary_unit']} ({r['primary_metric']}:{r['primary_statistic']})"
        table.add_row(
            r["run_digest"][:19], r["operation"] or "(pending)", r["workload"] or "(pending)", r["source"] or "",
            r["hardware_model"] or "", r["status"] + (" (retracted)" if r["retracted"] else ""), r["evidence"] or "",
            value,
        )
    console = Console()
    if not console.is_terminal:  # piped: no terminal width to fold the rows into
        console.width = 200
    console.print(table)


def show_command(
    id_or_digest: Annotated[str, typer.Argument(help="run id, run digest, or a digest prefix of 8+ hex characters")],
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Show one run with its protocol, environment, workload, implementation and measurements."""
    from kernelindex.ranking.evidence_facts import evidence_for_runs
    from kernelindex.store.queries import LookupProblem, find_run_id, run_detail

    store = _open(db)
    with store.begin() as conn:
        try:
            detail = run_detail(conn, find_run_id(conn, id_or_digest))
        except LookupProblem as exc:
            _fail([str(exc)])
        evidence = evidence_for_runs(conn, [detail["digest"]]).get(detail["digest"])
    detail["evidence"] = {"level": evidence.level, "reasons": list(evidence.reasons)} if evidence else None
    if as_json:
        _print_json(detail)
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    run_meta = detail["run"]["metadata"]
    console.print(f"[bold]{run_meta.get('title', run_meta['name'])}[/bold]")
    info = Table(show_header=False, box=None)
    info.add_column(style="dim")
    info.add_column(overflow="fold")
    primary = detail["primary"]
    for label, value in (
        ("run", f"{detail['digest']}  (id {detail['id']})"),
        ("status", detail["status"] + ("  RETRACTED" if detail["retracted"] else "")),
        ("evidence", "; ".join([detail["evidence"]["level"], *detail["evidence"]["reasons"]]) if detail["evidence"] else "-"),
        ("observed", detail["observedAt"]),
        ("source", (detail["source"] or {}).get("slug", "(pending)")),
        ("primary", f"{primary['metric']}:{primary['statistic']} = {_number(primary['value'])} {primary['unit']}" if primary["metric"] else "none"),
        ("hardware", " / ".join(v for v in detail["hardware"].values() if v)),
        ("protocol", f"{detail['keys']['protocol']}  {detail['protocol']['metadata'].get('title', '')}"),
        ("environment", f"{detail['keys']['environment']}  {detail['environment']['metadata'].get('title', '')}"),
        ("workload", f"{detail['keys']['workload']}  " + (detail["workload"]["manifest"]["metadata"]["name"] if detail["workload"] else "(pending: not stored yet)")),
        ("implementation", f"{detail['keys']['implementation']}  " + (detail["implementation"]["manifest"]["metadata"]["name"] if detail["implementation"] else "(pending: not stored yet)")),
        ("comparison key", detail["keys"]["comparison"] or "(needs the workload)"),
        ("runner", " @ ".join(v for v in detail["runner"].values() if v) or "-"),
    ):
        info.add_row(label, str(value))
    console.print(info)
    if detail["measurements"]:
        table = Table(title="measurements")
        for column in ("metric", "statistic", "value", "unit", "samples"):
            table.add_column(column)
        for m in detail["measurements"]:
            table.add_row(m["metric"], m["statistic"], f"{m['value']:.6g}", m["unit"], "" if m["sample_count"] is None else str(m["sample_count"]))
        console.print(table)


def export_command(
    path: Annotated[Path, typer.Argument(help="file to write (.jsonl.zst)")],
    db: Db = None,
) -> None:
    """Write the whole store as a catalog export (.jsonl.zst) in the public format."""
    from kernelindex.ingest.export import count_rows, export_catalog

    if not path.name.endswith(".jsonl.zst"):
        _fail([f"{path}: an export is a .jsonl.zst file"], code=2)
    if not path.resolve().parent.is_dir():
        _fail([f"{path}: the folder {path.resolve().parent} does not exist"])
    store = _open(db)
    with store.begin() as conn:
        total = count_rows(conn)
    with _progress() as bar:
        task = bar.add_task(f"exporting {path.name}", total=total)
        counts = export_catalog(store, path, on_row=lambda: bar.advance(task))
    typer.echo(f"{path}: {sum(counts.values())} rows written")


def stats_command(db: Db = None, as_json: AsJson = False) -> None:
    """Counts of what the store holds."""
    from kernelindex.store.queries import store_stats

    store = _open(db)
    with store.begin() as conn:
        stats = store_stats(conn)
    if as_json:
        _print_json(stats)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="store")
    table.add_column("what")
    table.add_column("count", justify="right")
    for name, count in stats["tables"].items():
        table.add_row(name, str(count))
    table.add_row("cohorts (comparison keys)", str(stats["cohorts"]))
    for name, count in stats["pendingLinks"].items():
        table.add_row(f"runs waiting for their {name}", str(count))
    for name, count in stats["runsBySource"].items():
        table.add_row(f"runs from {name}", str(count))
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("import")(import_command)
    app.command("verify")(verify_command)
    app.command("runs")(runs_command)
    app.command("show")(show_command)
    app.command("export")(export_command)
    app.command("stats")(stats_command)
