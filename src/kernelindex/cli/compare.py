"""`kernelindex compare A B`: two runs side by side, from the store or a server (``--json``: the
API's compare view, stable)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kernelindex.cli.common import AsJson, Db, out_console, print_json
from kernelindex.cli.reads import Server, reads


def compare_command(
    a: Annotated[str, typer.Argument(help="run A: id, digest or 8+ hex digest prefix")],
    b: Annotated[str, typer.Argument(help="run B: id, digest or 8+ hex digest prefix")],
    db: Db = None,
    server: Server = None,
    as_json: AsJson = False,
) -> None:
    """Compare two runs: comparable or not, which key parts differ, and their ratio."""
    with reads(db, server) as source_of:
        view = source_of.compare(a, b).model_dump(mode="json")
    if as_json:
        print_json(view)
    else:
        render_compare(view)


def render_compare(v: dict[str, Any]) -> None:
    """The compare view (``/api/v1/compare``): the runs' digests, then a table with one column per run and
    one row per field."""
    from rich.table import Table

    out = out_console()
    runs = v["runs"]
    out.print("comparable" if v["comparable"] else "not comparable: " + ", ".join(v["differingParts"]), markup=False)
    for run in runs:  # each run's digest on its own line: never folded, whatever the width
        out.print(f"{run['label']}  {run['digest']}", markup=False)
    table = Table()
    table.add_column("")
    for run in runs:
        table.add_column(run["label"], overflow="fold")
    for field in v["fields"]:
        values = [str(x) for x in field["values"]]
        table.add_row(field["field"], *(values if not field["same"] else [values[0], *["same"] * (len(values) - 1)]))
    out.print(table, markup=False)
    if v["comparable"] and v["statement"]:
        out.print(f"{v['statement']}; ratio {v['ratioDefinition']} = {v['ratio']:.4g}", markup=False)
