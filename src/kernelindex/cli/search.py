"""`kernelindex search` (the site's search, on the command line) and `kernelindex cases` (a problem's
case ids, axes and sizes, to pass to ``eval --cases``).

``search --json`` prints exactly the document ``GET /api/v1/search`` returns.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kernelindex.cli.common import (
    DIGEST_SHOWN,
    UUID_WIDTH,
    AsJson,
    Db,
    fail,
    id_column,
    out_console,
    print_json,
    problem_folder,
)
from kernelindex.cli.reads import Server, reads


def search_command(
    query: Annotated[list[str], typer.Argument(help="e.g. 042 B200 verified · moe_token_scatter_bwd N=300 · ac4k")],
    db: Db = None,
    as_json: AsJson = False,
    rows: Annotated[int, typer.Option("--rows", min=1, max=200, help="rows of each rank table")] = 5,
    server: Server = None,
) -> None:
    """Answer a query: the best run per evidence level with its group's rank table, or the nearest cases.
    With ``--server`` the answer is the server's ``GET /api/v1/search`` document, printed the same way."""
    from kernelindex.search.answer import RANK_ROWS

    with reads(db, server) as source_of:
        document = source_of.search(" ".join(query), rows if not as_json else RANK_ROWS).document()
    if as_json:
        print_json(document)
        return
    _print_answer(document)


def _print_answer(doc: dict[str, Any]) -> None:
    from rich.table import Table

    console = out_console()
    say = lambda text, style=None: console.print(text, markup=False, style=style)  # noqa: E731
    for note in doc["notes"]:
        say(f"note: {note}", "yellow")
    for op in doc["operations"]:
        ref = op["operation"]
        say("")
        say(f"{ref['name'] or ref['slug']}  ({ref['family'] or 'no family'})  {ref['links']['self']}", "bold")
        pinned = ", ".join(f"{k}={v}" for k, v in op["pinned"].items())
        say(
            {
                "exact": f"a measured case has {pinned}",
                "bracketing": f"no measured case has {pinned}: the nearest on each side",
                "overview": f"no axis pinned (axes: {', '.join(op['axisNames'])})",
            }[op["mode"]],
            "dim",
        )
        for note in op["notes"]:
            say(f"  note: {note}", "yellow")
        for w in op["workloads"]:
            axes = ", ".join(f"{k}={v}" for k, v in w["axes"].items()) or w["title"]
            say(f"  [{w['relation']}] {axes}  {w['links']['self']}")
            if not w["groups"]:
                say("    no ranked run matches", "dim")
            for g in w["groups"]:
                say(
                    f"    {g['hardware'] or '?'} · {g['source'] or '?'} · {g['metricKey']}, {g['direction']} · "
                    f"{g['size']} ranked · group {g['comparisonKey'][:DIGEST_SHOWN]}"
                )
                for level, r in g["bestByEvidence"].items():
                    say(
                        f"      best {level}: {r['display']} (rank {r['rank']}) {r['title']}  "
                        f"{r['digest'][:DIGEST_SHOWN]}"
                    )
                table = Table(box=None, padding=(0, 1), show_edge=False)
                table.add_column("rank", justify="right", no_wrap=True)
                table.add_column("value", justify="right", no_wrap=True)
                table.add_column("evidence", no_wrap=True)
                id_column(table, "digest")
                table.add_column("title", overflow="fold")
                for r in g["rows"]:
                    table.add_row(
                        f"{r['rank']}{'=' if r['tied'] else ''}",
                        r["display"],
                        r["evidence"] or "—",
                        r["digest"][:DIGEST_SHOWN],
                        r["title"],
                    )
                console.print(table, markup=False)
                if len(g["rows"]) < g["size"]:
                    say(f"      … {g['size'] - len(g['rows'])} more ranked: --rows N, or kernelindex rank KEY", "dim")
    if doc["otherOperations"]:
        say("")
        say("other operations these words name: " + ", ".join(o["slug"] for o in doc["otherOperations"]))
    if doc["matches"]:
        say("")
        table = Table(title="records", title_justify="left")
        table.add_column("kind", no_wrap=True)
        id_column(table, "digest")
        table.add_column("title", overflow="fold")
        table.add_column("detail", overflow="fold")
        for m in doc["matches"]:
            table.add_row(m["kind"], (m["digest"] or "")[:DIGEST_SHOWN], m["title"], m["detail"] or "")
        console.print(table, markup=False)


def cases_command(
    problem: Annotated[
        str, typer.Argument(help="problem folder, or one of our packs: moe_load_balance_bwd, moe_token_scatter_bwd")
    ],
    as_json: AsJson = False,
) -> None:
    """List a problem's cases: the ids `eval --cases` takes, their axes, input sizes and tensor shapes."""
    from kernelindex.formats.errors import FormatError
    from kernelindex.formats.problem import load_problem
    from kernelindex.harness.dtypes import torch_dtype
    from kernelindex.records.units import format_bytes

    try:
        loaded = load_problem(problem_folder(problem))
    except FormatError as exc:
        fail(str(exc))
    definition = loaded.definition
    variable = [a.name for a in definition.axes.values() if a.type == "var"]
    items: list[dict[str, Any]] = []
    for case in loaded.cases:
        values = definition.resolve_axes(case.axes, where=f"case {case.uuid}")
        shapes, total = {}, 0
        for name, spec in definition.inputs.items():
            shape = [int(d) if str(d).isdigit() else values[d] for d in (spec.shape or ())]
            shapes[name] = shape
            count = 1
            for d in shape:
                count *= d
            total += count * torch_dtype(spec.dtype).itemsize
        items.append(
            {
                "id": case.uuid,
                "axes": {n: values[n] for n in variable},
                "allAxes": values,
                "inputBytes": total,
                "inputShapes": shapes,
                "tSolMs": case.t_sol_ms,
                "tBaselineMs": case.t_b_ms,
            }
        )
    items.sort(key=lambda c: tuple(c["axes"].values()))
    if as_json:
        print_json({"problem": definition.name, "folder": str(loaded.root), "cases": items})
        return
    from rich.table import Table

    table = Table(title=f"{definition.name}: {len(items)} cases ({loaded.root})", title_justify="left")
    id_column(table, "case id", UUID_WIDTH)
    for name in variable:
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("inputs", justify="right", no_wrap=True)
    table.add_column("largest input", overflow="fold")
    for c in items:
        input_shapes: dict[str, list[int]] = c["inputShapes"]
        largest = max(input_shapes.items(), key=lambda kv: _count(kv[1]), default=("", []))
        table.add_row(
            c["id"],
            *(str(c["axes"][n]) for n in variable),
            format_bytes(c["inputBytes"]),
            f"{largest[0]} {list(largest[1])}",
        )
    out_console().print(table, markup=False)


def _count(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
