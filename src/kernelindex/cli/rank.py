"""`kernelindex rank`: the ranked comparison groups of a workload, as the site shows them, from the
store or a server (``--json``: the API's group views, stable)."""

from __future__ import annotations

from typing import Any

import typer

from kernelindex.cli.common import AsJsonl, Db, console, fail, open_store_or_fail, print_json, print_jsonl
from kernelindex.cli.reads import Server, reads


def rank(
    target: str = typer.Argument(
        ...,
        help="a comparison key, or a workload, operation or run as `runs` and `show` "
        "print them (id, digest or 8+ hex prefix, name, slug, alias)",
    ),
    db: Db = None,
    server: Server = None,
    as_json: bool = typer.Option(False, "--json", help="print the ranking as JSON (as /api/v1 returns it)"),
    as_jsonl: AsJsonl = False,
    limit: int = typer.Option(None, "--limit", min=1, help="show only the best N runs of each group"),
    record_leaders: bool = typer.Option(
        False, "--record-leaders", help="first append a leader event for every group whose leader changed"
    ),
) -> None:
    """List the ranked comparison groups of a workload or operation (or the one group of a key or run)."""
    if record_leaders:
        if server:
            fail("--record-leaders writes to a local store; it cannot be used with --server", code=2)
        from kernelindex.ranking.leaders import record_leader_changes

        with open_store_or_fail(db).begin() as conn:
            events = record_leader_changes(conn)
        typer.echo(f"recorded {len(events)} leader event(s)", err=True)
    with reads(db, server) as source_of:
        groups = source_of.groups(target, limit)
    if not groups:
        fail(f"{target!r} names no comparison group with runs in {server or 'this store'}")
    if as_json:
        print_json(groups)
    elif as_jsonl:
        print_jsonl(groups)
    else:
        render_groups(groups)


def render_groups(groups: list[dict[str, Any]]) -> None:
    from rich.table import Table

    out = console()
    for g in groups:
        proto = (g["protocol"] or {}).get("title") or "unknown protocol"
        env = (g["environment"] or {}).get("title") or "unknown environment"
        table = Table(
            title=f"{proto} · {env}\n{g['comparisonKey']}\n{g['metricKey']}: {g['direction']}; ties: {g['tieRule']}",
            title_justify="left",
        )
        for col in ("rank", "value", "95% interval", "evidence", "observed", "run", "title"):
            table.add_column(col, justify="right" if col in ("rank", "value") else "left", no_wrap=col == "run")
        for row in g["rows"]:
            table.add_row(
                f"{row['rank']}{'=' if row['tied'] else ''}",
                row["display"],
                (row["interval"] or {}).get("display", "—"),
                (row["evidence"] or {}).get("level", "—"),
                row["date"],
                row["runId"],
                row["title"],
            )
        out.print(table, markup=False)
        for x in g["excluded"]:
            out.print(f"  not ranked: {x['runId']} {', '.join(x['reasons'])} ({x['title']})", markup=False)
