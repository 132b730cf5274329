"""`kernelindex runs` and `kernelindex show`: listing and showing stored runs.

Values are written in human units (``317.9 µs``); ``--json`` keeps the raw stored values. Digests
and ids are never folded, so they can be copied into ``show``, ``rank`` and URLs as printed.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer

from kernelindex.cli.common import (
    AsJson,
    Db,
    fail,
    human,
    id_column,
    open_store_or_fail,
    out_console,
    print_json,
)

DIGEST_SHOWN = 19  # "sha256:" and 12 hex characters: a prefix `show` and `rank` accept


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
    """List runs, filtered (values in human units; says when the runs mix software stacks)."""
    from kernelindex.ranking.evidence_facts import evidence_for_runs
    from kernelindex.store.reads.runs import RunFilter, list_runs
    from kernelindex.store.reads.stacks import stacks_of_runs

    store = open_store_or_fail(db)
    with store.engine.connect() as conn:
        rows, _ = list_runs(conn, RunFilter(operation, workload, source, hardware, status, limit=limit or None))
        levels = evidence_for_runs(conn, [r["run_digest"] for r in rows])
        stacks = stacks_of_runs(conn, [r["id"] for r in rows])
    for r in rows:
        r["evidence"] = levels[r["run_digest"]].level if r["run_digest"] in levels else None
        r["stack"] = stacks.get(r["id"])
        r["display"] = human(r["primary_value"], r["primary_unit"]) if r["primary_value"] is not None else None
    mixed = Counter(r["stack"] for r in rows if r["stack"])
    if as_json:
        print_json(rows)
        return
    from rich.table import Table

    console = out_console()
    table = Table(title=f"{len(rows)} runs", title_justify="left")
    id_column(table, "digest")
    for column in ("operation", "workload", "source", "hardware", "status", "evidence"):
        table.add_column(column, overflow="fold")
    table.add_column("primary", justify="right", no_wrap=True)
    table.add_column("metric", overflow="fold")
    if len(mixed) > 1:
        table.add_column("stack", overflow="fold")
    for r in rows:
        cells = [r["run_digest"][:DIGEST_SHOWN], r["operation"] or "(pending)", r["workload"] or "(pending)",
                 r["source"] or "", r["hardware_model"] or "", r["status"] + (" (retracted)" if r["retracted"] else ""),
                 r["evidence"] or "", r["display"] or "—",
                 f"{r['primary_metric']}:{r['primary_statistic']}" if r["primary_metric"] else ""]
        if len(mixed) > 1:
            cells.append(r["stack"] or "")
        table.add_row(*cells)
    console.print(table, markup=False)
    if len(mixed) > 1:
        listed = "; ".join(f"{label} ({n} run{'' if n == 1 else 's'})" for label, n in mixed.most_common())
        console.print(f"note: these runs mix {len(mixed)} software stacks: {listed}. Runs on different stacks "
                      "are never ranked together.", markup=False)


def show_command(
    id_or_digest: Annotated[str, typer.Argument(help="run id, run digest, or a digest prefix of 8+ hex characters")],
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Show one run: rank in its group, SOL score, speedup, protocol, environment, workload and measurements."""
    from kernelindex.ranking.evidence_facts import evidence_for_runs
    from kernelindex.ranking.reads import ranked_group
    from kernelindex.store.reads.lookup import LookupFailed, resolve_run
    from kernelindex.store.reads.runs import run_detail
    from kernelindex.store.reads.stacks import stack_label

    store = open_store_or_fail(db)
    with store.engine.connect() as conn:
        try:
            detail = run_detail(conn, resolve_run(conn, id_or_digest).id)
        except LookupFailed as exc:
            fail([str(exc)])
        evidence = evidence_for_runs(conn, [detail["digest"]]).get(detail["digest"])
        group = ranked_group(conn, detail["keys"]["comparison"]) if detail["keys"]["comparison"] else None
    detail["evidence"] = {"level": evidence.level, "reasons": list(evidence.reasons)} if evidence else None
    entry = group.entry(detail["id"]) if group else None
    excluded = group.exclusion(detail["id"]) if group else None
    detail["rank"] = {"rank": entry.rank if entry else None, "tied": bool(entry and entry.tied),
                      "groupSize": group.size if group else 0,
                      "excluded": list(excluded.reasons) if excluded else []}
    native = ((detail["run"].get("spec") or {}).get("sourceNative") or {}).get("metrics") or {}
    by_metric = {m["metric"]: m["value"] for m in detail["measurements"]}
    detail["solScore"] = native.get("sol_score", by_metric.get("sol_score"))
    detail["speedup"] = native.get("avg_speedup", by_metric.get("speedup"))
    detail["stack"] = stack_label((detail["environment"].get("spec") or {}).get("software"))
    if as_json:
        print_json(detail)
        return
    from rich.table import Table

    console = out_console()
    run_meta = detail["run"]["metadata"]
    console.print(run_meta.get("title", run_meta["name"]), style="bold", markup=False)
    primary = detail["primary"]
    rank = detail["rank"]
    if rank["rank"] is not None:
        rank_text = f"{rank['rank']}{'=' if rank['tied'] else ''} of {rank['groupSize']} in its comparison group"
    elif rank["excluded"]:
        rank_text = f"not ranked: {', '.join(rank['excluded'])}"
    else:
        rank_text = "not ranked (no comparison group yet)"
    value = (f"{human(primary['value'], primary['unit'])}  ({primary['metric']}:{primary['statistic']})"
             if primary["metric"] else "none")
    workload = detail["workload"]["manifest"]["metadata"]["name"] if detail["workload"] else "(pending: not stored yet)"
    impl = detail["implementation"]
    impl_name = impl["manifest"]["metadata"]["name"] if impl else "(pending: not stored yet)"
    evidence = detail["evidence"]
    evidence_text = "; ".join([evidence["level"], *evidence["reasons"]]) if evidence else "-"
    for label, text in (
        ("run", detail["digest"]),
        ("id", detail["id"]),
        ("status", detail["status"] + ("  RETRACTED" if detail["retracted"] else "")),
        ("primary", value),
        ("rank", rank_text),
        ("SOL score", "—" if detail["solScore"] is None else f"{detail['solScore']:.4f}"),
        ("speedup", "—" if detail["speedup"] is None else f"{detail['speedup']:.2f}×"),
        ("evidence", evidence_text),
        ("observed", detail["observedAt"]),
        ("source", (detail["source"] or {}).get("slug", "(pending)")),
        ("hardware", " / ".join(v for v in detail["hardware"].values() if v)),
        ("stack", detail["stack"]),
        ("protocol", f"{detail['keys']['protocol']}  {detail['protocol']['metadata'].get('title', '')}"),
        ("environment", f"{detail['keys']['environment']}  {detail['environment']['metadata'].get('title', '')}"),
        ("workload", f"{detail['keys']['workload']}  {workload}"),
        ("implementation", f"{detail['keys']['implementation']}  {impl_name}"),
        ("comparison key", detail["keys"]["comparison"] or "(needs the workload)"),
        ("runner", " @ ".join(v for v in detail["runner"].values() if v) or "-"),
    ):
        console.print(f"{label:<15} {text}", markup=False)  # one line each: a digest is never folded
    if detail["measurements"]:
        table = Table(title="measurements", title_justify="left")
        for column in ("metric", "statistic", "value", "raw", "samples"):
            table.add_column(column, justify="right" if column in ("value", "raw", "samples") else "left")
        for m in detail["measurements"]:
            table.add_row(m["metric"], m["statistic"], human(m["value"], m["unit"]), f"{m['value']:.6g} {m['unit']}",
                          "" if m["sample_count"] is None else str(m["sample_count"]))
        console.print(table, markup=False)
