"""`kernelindex export`: the store (or a server's, with --server) as a catalog export in the public format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from kernelindex.cli.common import Db, fail, open_store_or_fail, progress
from kernelindex.cli.reads import Server


def export_command(
    path: Annotated[Path, typer.Argument(help="file to write (.jsonl.zst)")],
    db: Db = None,
    server: Server = None,
) -> None:
    """Write the whole store as a catalog export (.jsonl.zst) in the public format."""
    if not path.name.endswith(".jsonl.zst"):
        fail([f"{path}: an export is a .jsonl.zst file"], code=2)
    if not path.resolve().parent.is_dir():
        fail([f"{path}: the folder {path.resolve().parent} does not exist"])
    if server:
        if db:
            fail("give --db or --server, not both", code=2)
        rows = _export_remote(server, path)
    else:
        rows = _export_local(db, path)
    typer.echo(f"{path}: {rows} rows written")


def _export_local(db: str | None, path: Path) -> int:
    from kernelindex.ingest.export import export_catalog
    from kernelindex.store.reads.export import count_rows

    store = open_store_or_fail(db, read_only=True)
    with store.read() as conn:
        total = count_rows(conn)
    try:
        with progress() as bar:
            task = bar.add_task(f"exporting {path.name}", total=total)
            counts = export_catalog(store, path, on_row=lambda: bar.advance(task))
    except OSError as exc:
        _cannot_write(path, exc)
    return sum(counts.values())


def _cannot_write(path: Path, exc: OSError) -> NoReturn:
    """End the command on an export that could not be written (no partial file is left): where, and why."""
    fail(f"{path}: cannot write the export in the folder {path.resolve().parent}: {exc.strerror or exc}")


def _export_remote(server: str, path: Path) -> int:
    """The server's /api/v1/export lines, compressed as a local export is; written beside, then renamed."""
    import os

    import zstandard

    from kernelindex.client import ApiError, Client

    try:
        api = Client(server)
    except ValueError as exc:
        fail(f"--server: {exc}", code=2)
    partial = path.with_name(path.name + ".partial")
    rows = 0
    try:
        try:
            with api, api.export() as stream, progress() as bar, open(partial, "wb") as raw:
                task = bar.add_task(f"exporting {path.name} from {server}", total=stream.total)
                with zstandard.ZstdCompressor(level=10).stream_writer(raw, closefd=False) as out:
                    for line in stream.lines:
                        out.write(line.encode("utf-8") + b"\n")
                        rows += 1
                        bar.advance(task)
            if stream.total is not None and rows != stream.total:
                raise ApiError(
                    {
                        "title": "Truncated answer",
                        "status": None,
                        "detail": f"the server announced {stream.total} rows and sent {rows}",
                    },
                    method="GET",
                    url=f"{server}/api/v1/export",
                )
            os.replace(partial, path)
        except BaseException:  # however it ends early, no half-written file is left behind
            partial.unlink(missing_ok=True)
            raise
    except ApiError as exc:
        fail(f"{server}: {exc.detail}")
    except OSError as exc:
        _cannot_write(path, exc)
    return rows
