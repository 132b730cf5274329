"""`kernelindex rank`: the ranked comparison groups of a workload, as the site shows them."""

from __future__ import annotations

import typer

from kernelindex.cli.common import Db, open_store_or_fail


def rank(
    target: str = typer.Argument(..., help="workload id or digest, or a comparison key (sha256:…)"),
    db: Db = None,
    as_json: bool = typer.Option(False, "--json", help="print the ranking as JSON (as /api/v1 returns it)"),
    limit: int = typer.Option(None, "--limit", min=1, help="show only the best N runs of each group"),
    record_leaders: bool = typer.Option(
        False, "--record-leaders", help="first append a leader event for every group whose leader changed"),
) -> None:
    """List the ranked comparison groups of a workload (or one group by its comparison key)."""
    import json
    import sys

    from rich.console import Console
    from rich.table import Table

    from kernelindex.ranking.leaders import record_leader_changes
    from kernelindex.ranking.reads import workload_groups
    from kernelindex.web import queries

    store = open_store_or_fail(db)
    if record_leaders:
        with store.begin() as conn:
            events = record_leader_changes(conn)
        typer.echo(f"recorded {len(events)} leader event(s)", err=True)
    with store.engine.connect() as conn:
        workload = queries.find_workload(conn, target)
        if workload is not None:
            groups = queries.groups_view(conn, workload_groups(conn, workload.id), limit)
        else:
            group = queries.ranking_view(conn, target, limit)
            groups = [group] if group else []
    if not groups:
        typer.echo(f"error: no workload or comparison group {target!r} with runs in this store", err=True)
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps(groups, indent=2, ensure_ascii=False))
        return
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    for g in groups:
        proto = (g["protocol"] or {}).get("title") or "unknown protocol"
        env = (g["environment"] or {}).get("title") or "unknown environment"
        table = Table(title=f"{proto} · {env}\n{g['comparisonKey']}\n{g['metricKey']}: {g['direction']}; "
                            f"ties: {g['tieRule']}", title_justify="left")
        for col in ("rank", "value", "95% interval", "evidence", "observed", "run", "title"):
            table.add_column(col, justify="right" if col in ("rank", "value") else "left")
        for row in g["rows"]:
            table.add_row(f"{row['rank']}{'=' if row['tied'] else ''}", row["display"],
                          (row["interval"] or {}).get("display", "—"), (row["evidence"] or {}).get("level", "—"),
                          row["date"], row["runId"], row["title"])
        console.print(table, markup=False)
        for x in g["excluded"]:
            console.print(f"  not ranked: {x['runId']} {', '.join(x['reasons'])} ({x['title']})", markup=False)
