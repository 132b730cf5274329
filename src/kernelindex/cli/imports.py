"""`kernelindex import`: catalog exports, run bundles, problem packs and traces into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kernelindex.cli.common import (
    AsJson,
    Db,
    fail,
    open_store_or_fail,
    print_json,
    stderr,
)


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
        fail([str(p) for p in exc.problems])
    store = open_store_or_fail(db, create=True)
    err = stderr()
    with Progress(*Progress.get_default_columns()[:3], DownloadColumn(), TransferSpeedColumn(), console=err, transient=True, disable=not err.is_terminal) as bar:
        def open_file(path: Path):
            return bar.open(path, "rb", description=f"importing {path.name}")

        try:
            reports = import_paths(store, paths, open_file=open_file, trace_problem=problem, trace_solution=solution)
        except ImportFailed as exc:
            fail([str(p) for p in exc.problems])
        except SQLAlchemyError as exc:  # e.g. a concurrent import wrote the same rows first
            fail([f"the database refused the import (nothing was stored): {str(exc).splitlines()[0]}"])
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
        print_json(summary)
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
