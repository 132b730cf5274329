"""`kernelindex runs` and `kernelindex show`: runs listed and shown, from the store or a server.

``--json`` prints the API's own views (``/api/v1/runs`` items, ``/api/v1/runs/{id}``) and is
stable, with the stored values (``317881`` ns); the tables are for people: values in human units
(``317.9 µs``), digests and ids never folded, so they can be copied into ``show``, ``rank`` and URLs.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import typer

from kernelindex.cli.common import (
    DIGEST_SHOWN,
    MAX_LIMIT,
    AsJson,
    AsJsonl,
    Db,
    id_column,
    out_console,
    print_json,
    print_jsonl,
    stderr,
)
from kernelindex.cli.reads import Server, reads


def runs_command(
    operation: Annotated[str | None, typer.Option(help="operation slug, alias, name or digest prefix")] = None,
    workload: Annotated[str | None, typer.Option(help="workload id, name or digest prefix")] = None,
    comparison_key: Annotated[str | None, typer.Option("--comparison-key", help="comparison group key")] = None,
    source: Annotated[str | None, typer.Option(help="source slug, e.g. sol-execbench")] = None,
    hardware: Annotated[str | None, typer.Option(help="hardware model substring, architecture or vendor")] = None,
    status: Annotated[str | None, typer.Option(help="run status, e.g. passed")] = None,
    limit: Annotated[int, typer.Option(min=0, max=MAX_LIMIT, help="at most this many runs (0: all)")] = 50,
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
        items = source_of.runs(filters, limit + 1 if limit else None)  # one more: are there more?
        more = bool(limit) and len(items) > limit
        total = source_of.count_runs(filters) if more else len(items)
    rows = [r.model_dump(mode="json") for r in items[: limit or None]]
    if as_json:
        print_json(rows)
    elif as_jsonl:
        print_jsonl(rows)
    else:
        render_runs(rows, _part_shown(len(rows), total, more))
    if not rows or more:  # on stderr: --json and --jsonl stay the API's documents
        stderr().print(_listing_note(len(rows), total, filters), markup=False)


FILTER_OPTIONS = {"comparisonKey": "--comparison-key"}  # the others are --NAME


def _part_shown(shown: int, total: int | None, more: bool) -> str:
    """The table's title: how many runs it holds, of how many."""
    if not more:
        return f"{shown} run{'' if shown == 1 else 's'}"
    return f"{shown} of {total:,} runs" if total is not None else f"the first {shown} runs (more match)"


def _listing_note(shown: int, total: int | None, filters: dict[str, str]) -> str:
    """What a listing left out, or why it is empty: never a silent cut or a silent nothing."""
    if shown:
        part = f"{shown} of {total:,}" if total is not None else f"the first {shown}; more"
        return f"note: showing {part} matching runs, in arrival order; --limit 0 lists them all, or narrow the filters"
    if not filters:
        return "note: no runs in this store (kernelindex import FILES adds some)"
    named = " ".join(f"{FILTER_OPTIONS.get(k, '--' + k)} {v}" for k, v in filters.items())
    hint = " (--hardware matches part of a model name, an architecture or a vendor)" if "hardware" in filters else ""
    return f"note: no runs match {named}{hint}; try fewer filters, or `kernelindex stats` for what is stored"


def render_runs(rows: list[dict[str, Any]], title: str | None = None) -> None:
    """The listing as a table; a stack column and a note when the runs mix software stacks."""
    from rich.table import Table

    stacks = Counter(r["stack"] for r in rows if r.get("stack"))
    mixed = len(stacks) > 1
    table = Table(title=title or _part_shown(len(rows), len(rows), False), title_justify="left")
    id_column(table, "digest")
    for column in ("operation", "title", "source", "hardware", "status", "evidence"):
        table.add_column(column, overflow="fold")
    table.add_column("primary", justify="right", no_wrap=True)
    table.add_column("metric", overflow="fold")
    if mixed:
        table.add_column("stack", overflow="fold")
    for r in rows:
        primary = r["primary"]
        cells = [
            r["digest"][:DIGEST_SHOWN],
            r.get("operation") or "(pending)",
            r["title"] or "",
            r["source"] or "",
            r["hardware"] or "",
            r["status"],
            (r["evidence"] or {}).get("level", ""),
            primary["display"] if primary["metric"] else "—",
            f"{primary['metric']}:{primary['statistic']}" if primary["metric"] else "",
        ]
        table.add_row(*cells, *([r.get("stack") or ""] if mixed else []))
    out = out_console()
    out.print(table, markup=False)
    if mixed:
        listed = "; ".join(f"{label} ({n} run{'' if n == 1 else 's'})" for label, n in stacks.most_common())
        out.print(
            f"note: these runs mix {len(stacks)} software stacks: {listed}. "
            "Runs on different stacks are never ranked together.",
            markup=False,
        )


def show_command(
    id_or_digest: Annotated[str, typer.Argument(help="run id, run digest, or a digest prefix of 8+ hex characters")],
    db: Db = None,
    server: Server = None,
    as_json: AsJson = False,
) -> None:
    """Show one run: rank, evidence and why, measurements, protocol, environment, identity."""
    with reads(db, server) as source_of:
        view = source_of.run(id_or_digest).model_dump(mode="json")
    if as_json:
        print_json(view)
    else:
        render_run(view)


def _rank_text(rank: dict[str, Any]) -> str:
    if rank.get("rank") is not None:
        return f"{rank['rank']}{'=' if rank.get('tied') else ''} of {rank['groupSize']} in its comparison group"
    return "not ranked: " + "; ".join(rank.get("excludedText") or ["-"])


def render_run(v: dict[str, Any]) -> None:
    """The run view as one ``label  text`` line per fact (a digest is never folded), then its measurements."""
    from rich.table import Table

    from kernelindex.views.formatting import SOL_METRIC, SPEEDUP_METRICS, format_hardware

    out = out_console()
    out.print(v["title"], style="bold", markup=False)
    ident, primary = v["identity"], v["primary"]
    impl = ident["implementation"]
    shown_scores = {SOL_METRIC, *SPEEDUP_METRICS}
    direction = f", {primary['direction']}" if primary["direction"] else ""
    lines = [
        ("run", v["digest"]),
        ("id", v["id"]),
        ("status", v["status"] + ("  RETRACTED" if any(n.startswith("retracted") for n in v["notes"]) else "")),
        (
            "primary",
            f"{primary['display']}  ({primary['metric']}:{primary['statistic']}{direction})"
            if primary["metric"]
            else "none",
        ),
        ("rank", _rank_text(v["rank"])),
        ("SOL score", v.get("solDisplay", "—")),  # .get: a server older than these fields still answers
        ("speedup", v.get("speedupDisplay", "—")),
        *(
            (d["label"], d["text"])
            for d in (v.get("sourceNative") or {}).get("display", [])
            if d.get("metric") not in shown_scores
        ),
        ("evidence", "; ".join([v["evidence"]["level"], *v["evidence"]["reasons"]])),
        ("observed", v["observedAt"]),
        ("source", ident["source"]["slug"] or "-"),
        ("hardware", format_hardware(v["environment"]["hardware"]) or "-"),
        ("stack", v["environment"].get("stack") or "-"),
        ("protocol", f"{ident['protocolDigest']}  {v['protocol']['title'] or ''}"),
        ("environment", f"{ident['environmentDigest']}  {v['environment']['title'] or ''}"),
        ("workload", f"{ident['workload']['digest']}  {ident['workload']['title'] or '(pending: not stored yet)'}"),
        ("implementation", f"{impl['digest']}  {impl['title'] or '(pending: not stored yet)'}"),
        ("comparison key", ident["comparisonKey"] or "(needs the workload)"),
        ("permalink", v["citation"]["permalink"]),
    ]
    width = max(len(label) for label, _ in lines)
    for label, text in lines:
        out.print(f"{label:<{width}}  {text}".rstrip(), markup=False)
    if v["measurements"]:
        table = Table(title="measurements", title_justify="left")
        for column in ("metric", "statistic", "value", "samples"):
            table.add_column(column, justify="right" if column in ("value", "samples") else "left")
        for m in v["measurements"]:
            table.add_row(
                m["metric"], m["statistic"], m["display"], "" if m["sampleCount"] is None else str(m["sampleCount"])
            )
        out.print(table, markup=False)
