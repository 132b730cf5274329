"""`kernelindex export`: the store back into the public catalog export format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kernelindex.cli.common import Db, fail, open_store_or_fail, progress


def export_command(
    path: Annotated[Path, typer.Argument(help="file to write (.jsonl.zst)")],
    db: Db = None,
) -> None:
    """Write the whole store as a catalog export (.jsonl.zst) in the public format."""
    from kernelindex.ingest.export import export_catalog
    from kernelindex.store.reads.export import count_rows

    if not path.name.endswith(".jsonl.zst"):
        fail([f"{path}: an export is a .jsonl.zst file"], code=2)
    if not path.resolve().parent.is_dir():
        fail([f"{path}: the folder {path.resolve().parent} does not exist"])
    store = open_store_or_fail(db)
    with store.begin() as conn:
        total = count_rows(conn)
    with progress() as bar:
        task = bar.add_task(f"exporting {path.name}", total=total)
        counts = export_catalog(store, path, on_row=lambda: bar.advance(task))
    typer.echo(f"{path}: {sum(counts.values())} rows written")
