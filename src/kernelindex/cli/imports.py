"""`kernelindex import`: catalog exports, run bundles, problem packs, traces and upstream formats into the store."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from kernelindex.cli.common import (
    AsJson,
    BlobRoot,
    Db,
    check_import_settings,
    fail,
    fail_refusal,
    open_store_or_fail,
    print_json,
    stderr,
)

PathsHelp = "catalog .jsonl.zst/.jsonl, run bundle .json, folder of bundles, problem folder, trace .jsonl"


def import_command(
    paths: Annotated[list[Path], typer.Argument(help=PathsHelp)],
    db: Db = None,
    as_json: AsJson = False,
    problem: Annotated[
        Path | None,
        typer.Option(
            "--problem",
            help="for trace files: the problem folder the traces were measured on; with --from kernelbench: the "
            "KernelBench/ folder (level1, ...) whose problems the baselines timed, to link them to those problems",
        ),
    ] = None,
    solution: Annotated[
        Path | None, typer.Option("--solution", help="for trace files: the solution.json the traces measured")
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="read upstream's own format: sol-api, flashinfer, gpumode, liger, kernelbench, mlperf, or auto",
        ),
    ] = None,
    skip_invalid: Annotated[
        bool,
        typer.Option("--skip-invalid", help="catalogs: import the valid lines; report each refused one in --refused"),
    ] = False,
    refused_path: Annotated[
        Path | None,
        typer.Option("--refused", help="with --skip-invalid: the JSON Lines report (default ./NAME.refused.jsonl)"),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="read and validate everything, store nothing; exit 1 if anything is refused")
    ] = False,
    blob_root: BlobRoot = None,
) -> None:
    """Import files into the store: each file in one transaction, refused whole on any bad record
    (unless --skip-invalid)."""
    from kernelindex.ingest.problems import ImportFailed
    from kernelindex.services.opening import missing_sqlite_store
    from kernelindex.store.database import DatabaseError

    check_import_settings()
    if refused_path is not None and not skip_invalid:
        fail("--refused names the report of --skip-invalid; give --skip-invalid too")
    if source is not None and skip_invalid:
        fail("--skip-invalid applies to catalog files; an upstream import is all or nothing")
    if source is not None and solution is not None:
        fail("--solution names the solution.json of trace files; an upstream import (--from) takes none", code=2)
    with ExitStack() as scratch:
        try:
            if source is None:
                _check_paths(
                    paths, [name for name, given in (("--skip-invalid", skip_invalid), ("--check", check)) if given]
                )
            # --check on a store that does not exist compares with an empty scratch store: no file is made
            store = (
                _scratch_store(scratch) if check and missing_sqlite_store(db) else open_store_or_fail(db, create=True)
            )
            if source is not None:
                reports, leaders = _import_upstream(store, source, paths, check, problem)
            else:
                reports, leaders = _import_files(
                    store, paths, problem, solution, skip_invalid, refused_path, check, blob_root
                )
        except ImportFailed as exc:
            fail_refusal(exc)
        except DatabaseError as exc:
            fail([f"the database refused the import (nothing was stored): {str(exc).splitlines()[0]}"])
        _summarise(reports, leaders, as_json, check)


def _scratch_store(scratch: ExitStack):
    """An empty store in a temporary folder, closed and removed when ``scratch`` ends."""
    import tempfile

    from kernelindex.store import open_store

    folder = scratch.enter_context(tempfile.TemporaryDirectory(prefix="kernelindex-check-"))
    store = open_store(str(Path(folder) / "check.db"))
    scratch.callback(store.close)
    return store


# each kind of path `kind_of` tells apart, as a message names it
KINDS = {
    "bundles": "run bundles (.json)",
    "problem": "a problem folder",
    "kernelbench": "a KernelBench level folder",
    "traces": "a trace file",
}


def _check_paths(paths: list[Path], catalog_only: list[str]) -> None:
    """Refuse a bad path before anything is imported; ``catalog_only``: the options given that only
    catalog files take (--skip-invalid, --check)."""
    from kernelindex.services.imports import kind_of

    for path in paths:
        kind = kind_of(path)
        if catalog_only and kind != "catalog":
            verb = "applies" if len(catalog_only) == 1 else "apply"
            options = " and ".join(catalog_only)
            fail(f"{path}: {options} {verb} to catalog files (.jsonl.zst/.jsonl), not to {KINDS[kind]}")


def _import_upstream(store, source: str, paths: list[Path], check: bool, problems: Path | None):
    from kernelindex.services.imports import import_upstream_paths

    imported = import_upstream_paths(store, None if source == "auto" else source, paths, check=check, problems=problems)
    return imported.reports, imported.leader_events


def _import_files(store, paths, problem, solution, skip_invalid, refused_path, check, blob_root) -> tuple[list, list]:
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    from kernelindex.ingest.refused import RefusedLines
    from kernelindex.services.imports import BadLines, import_paths

    err = stderr()
    columns = (*Progress.get_default_columns()[:3], DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:

        def open_file(path: Path):
            return bar.open(path, "rb", description=f"importing {path.name}")

        with RefusedLines(refused_path, paths) as refused:
            if skip_invalid and not check and (why := refused.unwritable()) is not None:
                fail(why)
            bad_lines = BadLines(skip_invalid=skip_invalid, check=check, on_refused=refused.write)
            imported = import_paths(
                store,
                paths,
                open_file=open_file,
                trace_problem=problem,
                trace_solution=solution,
                bad_lines=bad_lines,
                blob_root=blob_root,
            )
    if skip_invalid:
        for _, report in imported.reports:
            report.refused_report = str(refused.path_for(report.path)) if report.skipped else None
    return imported.reports, imported.leader_events


SHOWN = 20  # foreign tables, unknown columns, skipped upstream rows: kinds listed at most, by count


def _summarise(reports: list, leader_events: list, as_json: bool, check: bool) -> None:
    """Print what was imported; ``leader_events`` are those the import's own transaction recorded."""
    from kernelindex.services.imports import ImportReport

    summary = []
    for kind, report in reports:
        if not isinstance(report, ImportReport):
            summary.append({"kind": kind, "result": report})
            continue
        item = {
            "kind": kind,
            "path": report.path,
            "lines": report.lines,
            "added": dict(report.added),
            "alreadyPresent": dict(report.present),
            "linked": dict(report.linked),
            "keptForeignTables": dict(report.foreign_tables),
            "unknownColumns": dict(report.unknown_columns),
            "skipped": report.skipped,
            "checkedOnly": report.checked_only,
            "upstreamRowsSkipped": dict(report.upstream_skipped),
        }
        if getattr(report, "refused_report", None):
            item["refusedReport"] = report.refused_report
        summary.append(item)
    if not check:
        summary.append(
            {"kind": "leader-changes", "result": f"{len(leader_events)} comparison group(s) with a new leader"}
        )
    if as_json:
        print_json(summary)
        return
    for item in summary:
        if "added" not in item:
            typer.echo(f"{item['kind']}: {item['result']}")
            continue
        added, present = sum(item["added"].values()), sum(item["alreadyPresent"].values())
        if item["checkedOnly"]:
            typer.echo(
                f"{item['path']}: {item['lines']} lines checked, all valid ({added} rows would be added, "
                f"{present} already present); nothing stored"
            )
            continue
        skipped = f", {item['skipped']} refused lines skipped (see {item['refusedReport']})" if item["skipped"] else ""
        typer.echo(f"{item['path']}: {item['lines']} lines, {added} rows added, {present} already present{skipped}")
        labels = (
            ("keptForeignTables", "kept rows of unmodelled table"),
            ("unknownColumns", "unknown column kept"),
            ("upstreamRowsSkipped", "upstream rows not imported:"),
        )
        for name, label in labels:
            counts = sorted(item[name].items(), key=lambda kv: -kv[1])
            for what, count in counts[:SHOWN]:
                typer.echo(f"  {label} {what}: {count} rows")
            if len(counts) > SHOWN:  # a hostile file can name thousands; --json lists every one
                typer.echo(
                    f"  … and {len(counts) - SHOWN} more ({sum(c for _, c in counts[SHOWN:])} rows; --json lists all)"
                )
        for what, count in item["linked"].items():
            typer.echo(f"  pending links filled ({what}): {count}")
