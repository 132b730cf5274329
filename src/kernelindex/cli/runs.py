"""`kernelindex runs` and `kernelindex show`: listing and showing stored runs."""

from __future__ import annotations

from typing import Annotated

import typer

from kernelindex.cli.common import (
    AsJson,
    Db,
    fail,
    number,
    open_store_or_fail,
    print_json,
)


def runs_command(
    operation: Annotated[str | None, typer.Option(help="operation slug, alias, name or digest prefix")] = None,
    workload: Annotated[str | None, typer.Option(help="workload id, name or digest prefix")] = None,
    source: Annotated[str | None, typer.Option(help="source slug, e.g. sol-execbench")] = None,
    hardware: Annotated[str | None, typer.Option(help="hardware model substring, architecture or vendor")] = None,
    status: Annotated[str | None, typer.Option(help="run status, e.g. passed")] = None,
    limit: Annotated[int, typer.Option(min=0, help="at most this many runs (0: all)")] = 50,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """List runs, filtered."""
    from kernelindex.ranking.evidence_facts import evidence_for_runs
    from kernelindex.store.reads.runs import RunFilter, list_runs

    store = open_store_or_fail(db)
    with store.engine.connect() as conn:
        rows, _ = list_runs(conn, RunFilter(operation, workload, source, hardware, status, limit=limit or None))
        levels = evidence_for_runs(conn, [r["run_digest"] for r in rows])
    for r in rows:
        r["evidence"] = levels[r["run_digest"]].level if r["run_digest"] in levels else None
    if as_json:
        print_json(rows)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} runs")
    for column in ("digest", "operation", "workload", "source", "hardware", "status", "evidence", "primary"):
        table.add_column(column, overflow="fold")
    for r in rows:
        value = "" if r["primary_value"] is None else (
            f"{r['primary_value']:.6g} {r['primary_unit']} ({r['primary_metric']}:{r['primary_statistic']})")
        table.add_row(
            r["run_digest"][:19], r["operation"] or "(pending)", r["workload"] or "(pending)", r["source"] or "",
            r["hardware_model"] or "", r["status"] + (" (retracted)" if r["retracted"] else ""), r["evidence"] or "",
            value,
        )
    console = Console()
    if not console.is_terminal:  # piped: no terminal width to fold the rows into
        console.width = 200
    console.print(table)


def show_command(
    id_or_digest: Annotated[str, typer.Argument(help="run id, run digest, or a digest prefix of 8+ hex characters")],
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Show one run with its protocol, environment, workload, implementation and measurements."""
    from kernelindex.ranking.evidence_facts import evidence_for_runs
    from kernelindex.store.reads.lookup import LookupFailed, resolve_run
    from kernelindex.store.reads.runs import run_detail

    store = open_store_or_fail(db)
    with store.engine.connect() as conn:
        try:
            detail = run_detail(conn, resolve_run(conn, id_or_digest).id)
        except LookupFailed as exc:
            fail([str(exc)])
        evidence = evidence_for_runs(conn, [detail["digest"]]).get(detail["digest"])
    detail["evidence"] = {"level": evidence.level, "reasons": list(evidence.reasons)} if evidence else None
    if as_json:
        print_json(detail)
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    run_meta = detail["run"]["metadata"]
    console.print(f"[bold]{run_meta.get('title', run_meta['name'])}[/bold]")
    info = Table(show_header=False, box=None)
    info.add_column(style="dim")
    info.add_column(overflow="fold")
    primary = detail["primary"]
    evidence = detail["evidence"]
    pending = "(pending: not stored yet)"

    def named(kind: str) -> str:
        record = detail[kind]
        return f"{detail['keys'][kind]}  " + (record["manifest"]["metadata"]["name"] if record else pending)

    for label, value in (
        ("run", f"{detail['digest']}  (id {detail['id']})"),
        ("status", detail["status"] + ("  RETRACTED" if detail["retracted"] else "")),
        ("evidence", "; ".join([evidence["level"], *evidence["reasons"]]) if evidence else "-"),
        ("observed", detail["observedAt"]),
        ("source", (detail["source"] or {}).get("slug", "(pending)")),
        ("primary", f"{primary['metric']}:{primary['statistic']} = {number(primary['value'])} {primary['unit']}"
         if primary["metric"] else "none"),
        ("hardware", " / ".join(v for v in detail["hardware"].values() if v)),
        ("protocol", f"{detail['keys']['protocol']}  {detail['protocol']['metadata'].get('title', '')}"),
        ("environment", f"{detail['keys']['environment']}  {detail['environment']['metadata'].get('title', '')}"),
        ("workload", named("workload")),
        ("implementation", named("implementation")),
        ("comparison key", detail["keys"]["comparison"] or "(needs the workload)"),
        ("runner", " @ ".join(v for v in detail["runner"].values() if v) or "-"),
    ):
        info.add_row(label, str(value))
    console.print(info)
    if detail["measurements"]:
        table = Table(title="measurements")
        for column in ("metric", "statistic", "value", "unit", "samples"):
            table.add_column(column)
        for m in detail["measurements"]:
            samples = "" if m["sample_count"] is None else str(m["sample_count"])
            table.add_row(m["metric"], m["statistic"], f"{m['value']:.6g}", m["unit"], samples)
        console.print(table)
