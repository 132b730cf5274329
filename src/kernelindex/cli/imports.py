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
    skip_invalid: Annotated[bool, typer.Option(
        "--skip-invalid", help="catalogs: import the valid lines, write each refused one with its reason to --refused")] = False,
    refused_path: Annotated[Path | None, typer.Option(
        "--refused", help="with --skip-invalid: the JSON Lines report of refused lines (default ./NAME.refused.jsonl)")] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="catalogs: read and validate everything, store nothing; exit 1 if anything is refused")] = False,
) -> None:
    """Import files into the store: each file in one transaction, refused whole on any bad record
    (unless --skip-invalid)."""
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn
    from sqlalchemy.exc import SQLAlchemyError

    from kernelindex.ingest.catalog import BadLines, ImportReport
    from kernelindex.ingest.paths import import_paths, kind_of
    from kernelindex.ingest.problems import ImportFailed
    from kernelindex.ingest.refused import RefusedLines

    try:
        for path in paths:
            kind = kind_of(path)  # refuse a bad path before anything is imported
            if (skip_invalid or check) and kind != "catalog":
                fail(f"{path}: --skip-invalid and --check apply to catalog files (.jsonl.zst/.jsonl), not a {kind}")
    except ImportFailed as exc:
        fail([str(p) for p in exc.problems])
    if refused_path is not None and not skip_invalid:
        fail("--refused names the report of --skip-invalid; give --skip-invalid too")
    store = open_store_or_fail(db)
    err = stderr()
    with Progress(*Progress.get_default_columns()[:3], DownloadColumn(), TransferSpeedColumn(), console=err, transient=True, disable=not err.is_terminal) as bar:
        def open_file(path: Path):
            return bar.open(path, "rb", description=f"importing {path.name}")

        try:
            with RefusedLines(refused_path, paths if skip_invalid and not check else []) as refused:
                bad_lines = BadLines(skip_invalid=skip_invalid, check=check, on_refused=refused.write)
                reports = import_paths(store, paths, open_file=open_file, trace_problem=problem,
                                       trace_solution=solution, bad_lines=bad_lines)
        except ImportFailed as exc:
            fail([str(p) for p in exc.problems])
        except SQLAlchemyError as exc:  # e.g. a concurrent import wrote the same rows first
            fail([f"the database refused the import (nothing was stored): {str(exc).splitlines()[0]}"])
    from kernelindex.ranking.leaders import record_leader_changes

    leader_events = []
    if not check:
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
                "skipped": report.skipped, "checkedOnly": report.checked_only,
            }
        )
        if skip_invalid and report.skipped:
            summary[-1]["refusedReport"] = str(refused.path_for(report.path))
    if not check:
        summary.append({"kind": "leader-changes", "result": f"{len(leader_events)} comparison group(s) with a new leader"})
    if as_json:
        print_json(summary)
        return
    for item in summary:
        if "added" not in item:
            typer.echo(f"{item['kind']}: {item['result']}")
            continue
        added, present = sum(item["added"].values()), sum(item["alreadyPresent"].values())
        if item["checkedOnly"]:
            typer.echo(f"{item['path']}: {item['lines']} lines checked, all valid ({added} rows would be added, "
                       f"{present} already present); nothing stored")
            continue
        typer.echo(f"{item['path']}: {item['lines']} lines, {added} rows added, {present} already present"
                   + (f", {item['skipped']} refused lines skipped (see {item['refusedReport']})" if item["skipped"] else ""))
        for name, label in (("keptForeignTables", "kept rows of unmodelled table"), ("unknownColumns", "unknown column kept")):
            for what, count in item[name].items():
                typer.echo(f"  {label} {what}: {count} rows")
        for what, count in item["linked"].items():
            typer.echo(f"  pending links filled ({what}): {count}")
