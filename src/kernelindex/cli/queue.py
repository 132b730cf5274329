"""`kernelindex submit`, `kernelindex queue` and `kernelindex runners`: the rerun queue from the operator's side."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelindex.cli.common import (
    AsJson,
    Cases,
    Db,
    Timeout,
    case_list,
    fail,
    id_column,
    open_store_or_fail,
    out_console,
    print_json,
    stderr,
)
from kernelindex.records.vocabulary import RequestState

STATES = tuple(RequestState)  # as the API's `state` parameter takes them
queue_app = typer.Typer(no_args_is_help=True, help="The rerun queue: list, show, cancel, expire.")
runners_app = typer.Typer(no_args_is_help=True, help="Runner keys allowed to take jobs: add, list, revoke.")


def submit_command(
    problem: str = typer.Argument(
        ..., help="a problem folder, or the name of a problem pack (shipped or submitted before)"
    ),
    solution: Path = typer.Option(..., "--solution", "-s", help="solution.json (sources beside it are inlined)"),
    hardware: str = typer.Option("cpu", "--hardware", help="GPU product (H200, B200, ...) or cpu"),
    replicas: int = typer.Option(1, "--replicas", help="independent runner keys that must repeat it (2+ = replicated)"),
    rounds: int = typer.Option(10, help="correctness rounds with fresh inputs"),
    warmup: int = typer.Option(10, help="warm-up calls"),
    iterations: int = typer.Option(50, help="timed calls"),
    timeout: Timeout = 300.0,
    max_attempts: int = typer.Option(
        None, "--max-attempts", help="leases allowed before it fails (default 3 x replicas; at most 100)"
    ),
    cases: Cases = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Queue a solution for verification by remote runners; prints the request id."""
    from kernelindex.services import harness_adapter as harness
    from kernelindex.services.queue import QueueError, Submission, submit

    try:
        document = harness.inline_solution(solution)
        files = harness.problem_files(problem) if Path(problem).is_dir() else None
    except harness.FormatError as exc:
        fail(str(exc))
    submission = Submission(
        solution=document,
        problem_name=None if files else problem,
        problem_files=files,
        hardware=hardware,
        replicas=replicas,
        max_attempts=max_attempts,
        cases=case_list(cases),
        protocol={"rounds": rounds, "warmup": warmup, "iterations": iterations, "timeout_s": timeout},
    )
    store = open_store_or_fail(db, create=True)
    try:
        request_id = submit(store, submission)
    except QueueError as exc:
        fail(str(exc))
    if as_json:
        print_json({"id": request_id, "state": "queued"})
    else:
        typer.echo(f"queued rerun request {request_id} ({hardware}, {replicas} runner(s)); page /queue/{request_id}")


@queue_app.command("list")
def queue_list(
    state: str = typer.Option(None, help=", ".join(STATES)),
    limit: int = typer.Option(50, min=1, max=1000),
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """The newest rerun requests."""
    from rich.table import Table

    from kernelindex.store.reads import queue as reads
    from kernelindex.views.queue import request_summary

    if state is not None and state not in STATES:
        fail(f"--state: one of {', '.join(STATES)}, got {state!r}", code=2)
    store = open_store_or_fail(db, read_only=True)
    with store.engine.connect() as conn:
        items = [
            request_summary(r).model_dump(mode="json") for r in reads.requests_page(conn, state=state, limit=limit)
        ]
        counts = reads.state_counts(conn)
    total = counts.get(state, 0) if state else sum(counts.values())
    if len(items) < total:  # on stderr: --json stays the list of requests
        stderr().print(f"note: showing the newest {len(items)} of {total} requests (--limit up to 1000)", markup=False)
    if as_json:
        print_json(items)
        return
    table = Table()
    id_column(table, "request")
    for name in ("state", "problem", "solution", "hardware", "runners", "attempts", "queued"):
        table.add_column(name)
    for r in items:
        table.add_row(
            r["id"],
            r["state"],
            r["problem"],
            r["solution"],
            r["hardware"],
            str(r["replicas"]),
            f"{r['attempts']}/{r['maxAttempts']}",
            r["createdAt"],
        )
    out_console().print(table, markup=False)


@queue_app.command("show")
def queue_show(request_id: str, db: Db = None) -> None:
    """One request with its leases and runs, as JSON."""
    from kernelindex.store.reads import queue as reads
    from kernelindex.views.queue import request_detail

    store = open_store_or_fail(db, read_only=True)
    with store.engine.connect() as conn:
        row = reads.request_row(conn, request_id)
        if row is None:
            fail(f"no rerun request {request_id}")
        print_json(request_detail(conn, row).model_dump(mode="json"))


@queue_app.command("cancel")
def queue_cancel(request_id: str, db: Db = None) -> None:
    """Cancel a queued or leased request (a runner's later result for it is refused)."""
    from kernelindex.services.queue import QueueError, cancel

    try:
        cancel(open_store_or_fail(db), request_id)
    except QueueError as exc:
        fail(str(exc))
    typer.echo(f"cancelled {request_id}")


@queue_app.command("expire")
def queue_expire(db: Db = None) -> None:
    """Expire overdue leases now (leasing does this too) and requeue their requests."""
    from kernelindex.services.queue import expire

    typer.echo(f"expired {len(expire(open_store_or_fail(db)))} lease(s)")


@runners_app.command("add")
def runners_add(
    public_key: Path = typer.Argument(..., help="the runner's NAME.pub (kernelindex keys new NAME)"),
    hardware: str = typer.Option(..., "--hardware", help="what it runs on: a GPU product (H200) or cpu"),
    machine: str = typer.Option(..., "--machine", help="the machine's name; its runs are stored under it"),
    label: str = typer.Option(None, "--label", help="a name for people (default: the file stem)"),
    db: Db = None,
) -> None:
    """Register a runner key: only registered, unrevoked keys may take jobs and post results."""
    from kernelindex.services.queue import QueueError, register_runner

    try:
        text = public_key.read_text()
    except OSError as exc:
        fail(f"{public_key}: cannot read: {exc.strerror}")
    try:
        kid = register_runner(
            open_store_or_fail(db, create=True),
            text,
            label=label or public_key.stem,
            machine=machine,
            hardware=hardware,
        )
    except QueueError as exc:
        fail(f"{public_key}: {exc}")
    typer.echo(f"registered runner key {kid} ({hardware} on {machine})")


@runners_app.command("revoke")
def runners_revoke(key_id: str = typer.Argument(..., help="the runner key id (sha256:...)"), db: Db = None) -> None:
    """Revoke a runner key: its leases and results are refused from now on."""
    from kernelindex.services.queue import QueueError, revoke_runner

    try:
        revoke_runner(open_store_or_fail(db), key_id)
    except QueueError as exc:
        fail(str(exc))
    typer.echo(f"revoked runner key {key_id}")


@runners_app.command("list")
def runners_list(db: Db = None, as_json: AsJson = False) -> None:
    """Registered runner keys, revoked ones included."""
    from kernelindex.store.reads import queue as reads

    store = open_store_or_fail(db, read_only=True)
    with store.engine.connect() as conn:
        rows = [
            {
                "keyId": r.key_id,
                "label": r.label,
                "machine": r.machine,
                "hardware": r.hardware,
                "createdAt": r.created_at,
                "revokedAt": r.revoked_at,
            }
            for r in reads.all_runner_keys(conn)
        ]
    if as_json:
        print_json(rows)
        return
    for r in rows:
        typer.echo(
            f"{r['keyId']}  {r['label']}  {r['hardware']} on {r['machine']}"
            + (f"  revoked {r['revokedAt']}" if r["revokedAt"] else "")
        )
