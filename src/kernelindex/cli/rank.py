"""`kernelindex rank`: the ranked comparison groups of a workload, as the site shows them."""

from __future__ import annotations

import typer

from kernelindex.cli.common import Db, fail, open_store_or_fail


def rank(
    target: str = typer.Argument(..., help="a comparison key, or a workload, operation or run as `runs` and `show` "
                                           "print them (id, digest or 8+ hex prefix, name, slug, alias)"),
    db: Db = None,
    as_json: bool = typer.Option(False, "--json", help="print the ranking as JSON (as /api/v1 returns it)"),
    limit: int = typer.Option(None, "--limit", min=1, help="show only the best N runs of each group"),
    record_leaders: bool = typer.Option(
        False, "--record-leaders", help="first append a leader event for every group whose leader changed"),
) -> None:
    """List the ranked comparison groups of a workload or operation (or the one group of a key or run)."""
    import json

    from rich.table import Table

    from kernelindex.cli.common import id_column, out_console
    from kernelindex.ranking.reads import ranked_groups, workload_groups
    from kernelindex.services.leaders import record_leaders as append_leader_events
    from kernelindex.store.reads.lookup import LookupFailed, resolve_rank_target
    from kernelindex.web import views

    store = open_store_or_fail(db)
    if record_leaders:
        events = append_leader_events(store)
        typer.echo(f"recorded {len(events)} leader event(s)", err=True)
    with store.engine.connect() as conn:
        try:
            found = resolve_rank_target(conn, target)
        except LookupFailed as exc:
            fail([str(exc)])
        if found.comparison_key is not None:
            ranked = ranked_groups(conn, [found.comparison_key])
        else:
            ranked = {k: g for w in found.workload_ids for k, g in workload_groups(conn, w).items()}
        groups = views.groups_view(conn, ranked, limit)
    if not groups:
        fail([f"{target!r} names no comparison group with runs in this store"])
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
