"""`kernelindex verify`: recompute every stored digest and key (and, optionally, signatures)."""

from __future__ import annotations

from typing import Annotated

import typer

from kernelindex.cli.common import (
    MAX_SHOWN_PROBLEMS,
    AsJson,
    Db,
    open_store_or_fail,
    print_json,
    progress,
    stderr,
)


def verify_command(
    db: Db = None,
    as_json: AsJson = False,
    signatures: Annotated[
        bool, typer.Option("--signatures", help="also re-check every stored signature, offline")
    ] = False,
) -> None:
    """Recompute every stored digest and key; exit 1 on any mismatch."""
    from kernelindex.store.verify import count_records, verify_store

    store = open_store_or_fail(db, read_only=True)
    with progress() as bar:
        task = bar.add_task("verifying", total=count_records(store))
        report = verify_store(store, on_record=lambda: bar.advance(task))
    from kernelindex.cli.signatures import check_signatures, signature_report

    bad_signatures = 0
    if as_json:
        extra = {"signatures": signature_report(db)} if signatures else {}
        bad_signatures = len(extra["signatures"]["invalid"]) if signatures else 0
        print_json({"checked": report.checked, "mismatches": [vars(m) for m in report.mismatches], **extra})
    else:
        typer.echo(report.summary())
        err = stderr()
        for mismatch in report.mismatches[:MAX_SHOWN_PROBLEMS]:
            err.print(f"mismatch: {mismatch}", markup=False)
        bad_signatures = check_signatures(db) if signatures else 0
    if not report.ok or bad_signatures:
        raise typer.Exit(1)
