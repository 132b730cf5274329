"""`kernelindex corrections`: correction requests on runs, listed and resolved."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelindex.cli.common import Db, fail, open_store_or_fail

corrections_app = typer.Typer(no_args_is_help=True, add_completion=False, help="Correction requests on runs.")


@corrections_app.command("list")
def corrections_list(status: str = typer.Option("open", help="open, accepted, rejected or all"), db: Db = None) -> None:
    """Correction requests waiting for a maintainer (or all of them)."""
    from kernelindex.store.evidence_store import correction_requests_for

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
    supersede_with: Path | None = typer.Option(None, help="accept: store this corrected {run, protocol, environment} bundle as superseding the run"),
    reject: bool = typer.Option(False, "--reject", help="close the request without a change"),
    db: Db = None,
) -> None:
    """Answer a correction request with a retraction, a superseding run, or a rejection."""
    import json

    from sqlalchemy import select

    from kernelindex.store.evidence_store import EvidenceError, close_correction_request
    from kernelindex.store.evidence_tables import correction_requests
    from kernelindex.store.rows import RowError
    from kernelindex.store.tables import runs
    from kernelindex.store.writer import Writer

    if sum([retract, supersede_with is not None, reject]) != 1:
        fail("give exactly one of --retract, --supersede-with BUNDLE, --reject")
    store = open_store_or_fail(db)
    try:
        with store.begin() as conn:
            request = conn.execute(select(correction_requests).where(correction_requests.c.id == request_id)).first()
            if request is None:
                fail(f"no correction request {request_id}")
            run_id = conn.execute(select(runs.c.id).where(runs.c.run_digest == request.run_digest)).scalar_one()
            writer = Writer(conn)
            new_digest = None
            if retract:
                writer.retract_run(run_id, reason)
            elif supersede_with is not None:
                bundle = json.loads(supersede_with.read_text())
                if writer.add_run_bundle(bundle, supersedes_id=run_id) is None:
                    fail(f"{supersede_with}: that run is already stored; a superseding run must be new")
                from kernelindex.records.canonical import digest

                new_digest = digest(bundle["run"])
            close_correction_request(conn, request_id, "rejected" if reject else "accepted", reason, new_digest)
    except (EvidenceError, RowError, ValueError, OSError) as exc:
        fail(str(exc))
    typer.echo(f"{request_id}: {'rejected' if reject else 'accepted'}")
