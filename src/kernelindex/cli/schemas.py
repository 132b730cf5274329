"""`kernelindex schemas`: the JSON Schema of every record kind."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelindex.cli.common import fail


def schemas(outdir: str = typer.Argument(..., help="folder for one <kind>.v1alpha1.schema.json per kind")) -> None:
    """Write the JSON Schema (Draft 2020-12) of every record kind, one file per kind."""
    import json

    from kernelindex.records.json_schema import kind_schema, schema_file_name
    from kernelindex.records.models import KINDS

    folder = Path(outdir)
    if folder.exists() and not folder.is_dir():
        fail(f"{outdir}: is a file, not a folder; give a folder for the schema files")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for kind in sorted(KINDS):
            model = KINDS[kind]
            path = folder / schema_file_name(model)
            path.write_text(json.dumps(kind_schema(model), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            typer.echo(f"{kind}: {path}")
    except OSError as exc:  # a file on the way (a/b where a is a file), an unwritable folder
        fail(f"{exc.filename or outdir}: cannot write the schemas there: {exc.strerror}")
