"""`kernelindex rank`: the ranked comparison groups of a workload, as the site shows them, from the
store or a server (``--json``: the API's group views, stable)."""

from __future__ import annotations

from typing import Any

import typer

from kernelindex.cli.common import (
    DIGEST_SHOWN,
    MAX_LIMIT,
    AsJsonl,
    Db,
    fail,
    open_store_or_fail,
    out_console,
    print_json,
    print_jsonl,
)
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
    limit: int = typer.Option(None, "--limit", min=1, max=MAX_LIMIT, help="show only the best N runs of each group"),
    record_leaders: bool = typer.Option(
        False, "--record-leaders", help="first append a leader event for every group whose leader changed"
    ),
) -> None:
    """List the ranked comparison groups of a workload or operation (or the one group of a key or run)."""
    if record_leaders:
        if server:
            fail("--record-leaders writes to a local store; it cannot be used with --server", code=2)
        from kernelindex.services import leaders

        events = leaders.record_leaders(open_store_or_fail(db))
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
    """Each group: its key and rule on their own lines, then a table whose cells stay whole except the
    title's (digest prefixes can be passed to `show`, `rank` and `compare`); SOL score, speedup and
    interval columns only where some run has one."""
    from rich.table import Table

    out = out_console()
    for g in groups:
        proto = (g["protocol"] or {}).get("title") or "unknown protocol"
        env = (g["environment"] or {}).get("title") or "unknown environment"
        out.print(f"{proto} · {env}", style="bold", markup=False)
        out.print(f"group {g['comparisonKey']}", markup=False)
        out.print(f"{g['metricKey']}: {g['direction']}; ties: {g['tieRule']}", markup=False)
        rows = g["rows"]
        columns = {
            "rank": [f"{r['rank']}{'=' if r['tied'] else ''}" for r in rows],
            "digest": [(r["digest"] or "")[:DIGEST_SHOWN] for r in rows],
            "value": [r["display"] for r in rows],
            "95% interval": [(r["interval"] or {}).get("display", "—") for r in rows],
            "SOL score": [r["solDisplay"] for r in rows],
            "speedup": [r["speedupDisplay"] for r in rows],
            "evidence": [(r["evidence"] or {}).get("level", "—") for r in rows],
            "observed": [r["date"] for r in rows],
        }
        optional = ("95% interval", "SOL score", "speedup")
        shown = {k: v for k, v in columns.items() if k not in optional or any(c != "—" for c in v)}
        table = Table()
        for name, cells in shown.items():
            left = name in ("digest", "evidence", "observed")
            table.add_column(
                name, justify="left" if left else "right", no_wrap=True, min_width=max(map(len, cells), default=1)
            )
        table.add_column("title", overflow="fold")
        for i, row in enumerate(rows):
            table.add_row(*(cells[i] for cells in shown.values()), row["title"])
        out.print(table, markup=False)
        if len(rows) < g["size"]:  # --limit: say what was left out
            out.print(f"  showing the best {len(rows)} of {g['size']} ranked runs (without --limit: all)", markup=False)
        for x in g["excluded"]:
            out.print(f"  not ranked: {x['runId']} {', '.join(x['reasons'])} ({x['title']})", markup=False)
