"""`kernelindex runs` and `kernelindex show`: runs listed and shown, from the store or a server.

``--json`` prints the API's own views (``/api/v1/runs`` items, ``/api/v1/runs/{id}``) and is
stable; the tables are for people.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kernelindex.cli.common import AsJson, AsJsonl, Db, console, print_json, print_jsonl
from kernelindex.cli.reads import Server, reads

DIGEST_SHOWN = 19  # "sha256:" and 12 hex characters: a prefix `show` and `rank` accept


def runs_command(
    operation: Annotated[str | None, typer.Option(help="operation slug, alias, name or digest prefix")] = None,
    workload: Annotated[str | None, typer.Option(help="workload id, name or digest prefix")] = None,
    comparison_key: Annotated[str | None, typer.Option("--comparison-key", help="comparison group key")] = None,
    source: Annotated[str | None, typer.Option(help="source slug, e.g. sol-execbench")] = None,
    hardware: Annotated[str | None, typer.Option(help="hardware model substring, architecture or vendor")] = None,
    status: Annotated[str | None, typer.Option(help="run status, e.g. passed")] = None,
    limit: Annotated[int, typer.Option(min=0, help="at most this many runs (0: all)")] = 50,
    db: Db = None,
    server: Server = None,
    as_json: AsJson = False,
    as_jsonl: AsJsonl = False,
) -> None:
    """List runs in arrival order, filtered."""
    filters = {
        k: v
        for k, v in {
            "operation": operation,
            "workload": workload,
            "comparisonKey": comparison_key,
            "source": source,
            "hardware": hardware,
            "status": status,
        }.items()
        if v
    }
    with reads(db, server) as source_of:
        rows = source_of.runs(filters, limit or None)
    if as_json:
        print_json(rows)
    elif as_jsonl:
        print_jsonl(rows)
    else:
        render_runs(rows)


def render_runs(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(title=f"{len(rows)} runs")
    for column in ("digest", "operation", "title", "source", "hardware", "status", "evidence", "primary"):
        table.add_column(column, overflow="fold", no_wrap=column == "digest")
    for r in rows:
        primary = r["primary"]
        value = f"{primary['display']} ({primary['metric']}:{primary['statistic']})" if primary["metric"] else ""
        table.add_row(
            r["digest"][:19],
            r.get("operation") or "(pending)",
            r["title"] or "",
            r["source"] or "",
            r["hardware"] or "",
            r["status"],
            (r["evidence"] or {}).get("level", ""),
            value,
        )
    console().print(table, markup=False)


def show_command(
    id_or_digest: Annotated[str, typer.Argument(help="run id, run digest, or a digest prefix of 8+ hex characters")],
    db: Db = None,
    server: Server = None,
    as_json: AsJson = False,
) -> None:
    """Show one run: rank, evidence and why, measurements, protocol, environment, identity."""
    with reads(db, server) as source_of:
        view = source_of.run(id_or_digest)
    if as_json:
        print_json(view)
    else:
        render_run(view)


def _joined(values: Any) -> str:
    return " / ".join(str(v) for v in (values or {}).values() if v and not isinstance(v, dict | list))


def render_run(v: dict[str, Any]) -> None:
    from rich.table import Table

    out = console()
    out.print(v["title"], style="bold", markup=False)
    info = Table(show_header=False, box=None)
    info.add_column(style="dim", no_wrap=True)
    info.add_column(overflow="fold")
    ident, rank, primary = v["identity"], v["rank"], v["primary"]
    if rank.get("rank") is not None:
        rank_text = f"#{rank['rank']}{'=' if rank.get('tied') else ''} of {rank['groupSize']}"
    else:
        rank_text = "not ranked: " + "; ".join(rank.get("excludedText") or ["-"])
    impl = ident["implementation"]
    for label, value in (
        ("run", f"{v['digest']}  (id {v['id']})"),
        ("status", v["status"] + ("  RETRACTED" if any(n.startswith("retracted") for n in v["notes"]) else "")),
        ("evidence", "; ".join([v["evidence"]["level"], *v["evidence"]["reasons"]])),
        ("rank", rank_text),
        (
            "primary",
            f"{primary['key']} = {primary['display']} ({primary['direction']})" if primary["metric"] else "none",
        ),
        *((d["label"], d["text"]) for d in (v.get("sourceNative") or {}).get("display", [])),
        ("observed", v["observedAt"]),
        ("source", ident["source"]["slug"] or "-"),
        ("hardware", _joined(v["environment"]["hardware"]) or "-"),
        ("protocol", f"{ident['protocolDigest']}  {v['protocol']['title'] or ''}"),
        ("environment", f"{ident['environmentDigest']}  {v['environment']['title'] or ''}"),
        ("workload", f"{ident['workload']['digest']}  {ident['workload']['title'] or '(pending: not stored yet)'}"),
        ("implementation", f"{impl['digest']}  {impl['title'] or '(pending: not stored yet)'}"),
        ("comparison key", ident["comparisonKey"] or "(needs the workload)"),
        ("permalink", v["citation"]["permalink"]),
    ):
        info.add_row(label, str(value))
    out.print(info, markup=False)
    if v["measurements"]:
        table = Table(title="measurements")
        for column in ("metric", "statistic", "value", "unit", "samples"):
            table.add_column(column)
        for m in v["measurements"]:
            table.add_row(
                m["metric"],
                m["statistic"],
                m["display"],
                m["unit"],
                "" if m["sampleCount"] is None else str(m["sampleCount"]),
            )
        out.print(table, markup=False)
