"""`kernelindex compare A B`: two runs side by side, from the store or a server (``--json``: the
API's compare view, stable)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kernelindex.cli.common import AsJson, Db, console, print_json
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
        view = source_of.compare(a, b)
    if as_json:
        print_json(view)
    else:
        render_compare(view)


def render_compare(v: dict[str, Any]) -> None:
    from rich.table import Table

    out = console()
    table = Table(title="comparable" if v["comparable"] else "not comparable: " + ", ".join(v["differingParts"]))
    for column in ("", "A", "B"):
        table.add_column(column, overflow="fold")
    table.add_row("run", v["a"]["digest"], v["b"]["digest"])
    table.add_row("title", v["a"]["title"], v["b"]["title"])
    table.add_row("primary", v["a"]["primary"]["display"], v["b"]["primary"]["display"])
    table.add_row("evidence", v["a"]["evidence"]["level"], v["b"]["evidence"]["level"])
    for name, part in v["keyParts"].items():
        table.add_row(name, str(part["a"]), "same" if part["same"] else str(part["b"]))
    out.print(table, markup=False)
    if v["comparable"] and v["statement"]:
        out.print(f"{v['statement']}; ratio {v['ratioDefinition']} = {v['ratio']:.4g}", markup=False)
