"""`kernelindex rank`: the ranked comparison groups of a workload, as the site shows them."""

from __future__ import annotations

import typer

from kernelindex.cli.common import Db, open_store_or_fail


def rank(
    target: str = typer.Argument(..., help="workload id, name or digest (prefix), a comparison key (prefix), "
                                           "or a run digest prefix (its workload), as `runs` and `show` print them"),
    db: Db = None,
    as_json: bool = typer.Option(False, "--json", help="print the ranking as JSON (as /api/v1 returns it)"),
    limit: int = typer.Option(None, "--limit", min=1, help="show only the best N runs of each group"),
    record_leaders: bool = typer.Option(
        False, "--record-leaders", help="first append a leader event for every group whose leader changed"),
) -> None:
    """List the ranked comparison groups of a workload (or one group by its comparison key)."""
    import json

    from rich.table import Table

    from kernelindex.cli.common import fail, id_column, out_console
    from kernelindex.ranking.leaders import record_leader_changes
    from kernelindex.ranking.reads import workload_groups
    from kernelindex.store.reads.targets import resolve_target
    from kernelindex.web import queries

    store = open_store_or_fail(db)
    if record_leaders:
        with store.begin() as conn:
            events = record_leader_changes(conn)
        typer.echo(f"recorded {len(events)} leader event(s)", err=True)
    with store.engine.connect() as conn:
        workload = queries.find_workload(conn, target)
        group = None if workload is not None else queries.ranking_view(conn, target, limit)
        found = None
        if workload is None and group is None:
            found = resolve_target(conn, target)
            if found.problem:
                fail(found.problem)
            if found.comparison_key:
                group = queries.ranking_view(conn, found.comparison_key, limit)
        workload_id = workload.id if workload is not None else (found.workload_id if found else None)
        if workload_id:
            groups = queries.groups_view(conn, workload_groups(conn, workload_id), limit)
        else:
            groups = [group] if group else []
    if not groups:
        fail(f"no workload or comparison group {target!r} with ranked runs in this store")
    if found is not None and not as_json:
        out_console().print(f"{target}: read as {found.via}", markup=False, style="dim")
    if as_json:
        typer.echo(json.dumps(groups, indent=2, ensure_ascii=False))
        return
    console = out_console()
    for g in groups:
        proto = (g["protocol"] or {}).get("title") or "unknown protocol"
        env = (g["environment"] or {}).get("title") or "unknown environment"
        table = Table(title=f"{proto} · {env}\n{g['comparisonKey']}\n{g['metricKey']}: {g['direction']}; "
                            f"ties: {g['tieRule']}", title_justify="left")
        for col in ("rank", "value", "95% interval", "evidence", "observed"):
            table.add_column(col, justify="right" if col in ("rank", "value") else "left", no_wrap=True)
        id_column(table, "run")
        id_column(table, "digest")
        table.add_column("title", overflow="fold")
        for row in g["rows"]:
            table.add_row(f"{row['rank']}{'=' if row['tied'] else ''}", row["display"],
                          (row["interval"] or {}).get("display", "—"), (row["evidence"] or {}).get("level", "—"),
                          row["date"], row["runId"], row["digest"][:19], row["title"])
        console.print(table, markup=False)
        for x in g["excluded"]:
            console.print(f"  not ranked: {x['runId']} {', '.join(x['reasons'])} ({x['title']})", markup=False)
