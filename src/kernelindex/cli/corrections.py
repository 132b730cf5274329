"""`kernelindex corrections`: correction requests on runs, listed and resolved."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelindex.cli.common import Db, fail, open_store_or_fail

corrections_app = typer.Typer(no_args_is_help=True, add_completion=False, help="Correction requests on runs.")


@corrections_app.command("list")
def corrections_list(status: str = typer.Option("open", help="open, accepted, rejected or all"), db: Db = None) -> None:
    """Correction requests waiting for a maintainer (or all of them)."""
    from kernelindex.store.evidence.records import correction_requests_for

    store = open_store_or_fail(db)
    with store.begin() as conn:
        rows = correction_requests_for(conn, status=None if status == "all" else status)
    for row in rows:
        typer.echo(
            f"{row['id']}  {row['status']}  {row['run_digest']}  {row['problem']} -> {row['requested_action']}\n"
            f"    {row['details'][:200]}"
        )
    typer.echo(f"{len(rows)} request(s)")


@corrections_app.command("resolve")
def corrections_resolve(
    request_id: str = typer.Argument(...),
    reason: str = typer.Option(..., help="what was decided and why (shown on the run page)"),
    retract: bool = typer.Option(False, "--retract", help="accept: retract the run"),
    supersede_with: Path | None = typer.Option(
        None, help="accept: store this corrected {run, protocol, environment} bundle as superseding the run"
    ),
    reject: bool = typer.Option(False, "--reject", help="close the request without a change"),
    db: Db = None,
) -> None:
    """Answer a correction request with a retraction, a superseding run, or a rejection."""

    from kernelindex.records.strict_json import loads_strict
    from kernelindex.services.corrections import Decision, resolve_correction
    from kernelindex.store.evidence.records import EvidenceError
    from kernelindex.store.rows import RowError

    if sum([retract, supersede_with is not None, reject]) != 1:
        fail("give exactly one of --retract, --supersede-with BUNDLE, --reject")
    decision = Decision.RETRACT if retract else Decision.REJECT if reject else Decision.SUPERSEDE
    try:
        bundle = loads_strict(supersede_with.read_text()) if supersede_with is not None else None
    except (ValueError, OSError) as exc:
        fail(f"{supersede_with}: {exc}")
    store = open_store_or_fail(db)
    try:
        resolution = resolve_correction(store, request_id, decision, reason, bundle)
    except (EvidenceError, RowError) as exc:
        fail(f"{supersede_with}: {exc}" if supersede_with is not None else str(exc))
    events = len(resolution.leader_events)
    changes = f"; {events} comparison group(s) with a new leader" if events else ""
    typer.echo(f"{request_id}: {resolution.status}{changes}")
