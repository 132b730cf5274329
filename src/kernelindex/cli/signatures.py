"""`kernelindex sign`, `attest` and `verify-signatures`: signing records and checking signatures offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from kernelindex.cli.common import Db, fail, load_private_key, open_store_or_fail

EXPORT_KIND = "CatalogExport"


def sign(
    digests: list[str] = typer.Argument(None, help="digests of stored records to sign"),
    key: Path = typer.Option(..., "--key", help="private key file from `kernelindex keys new`"),
    label: str | None = typer.Option(None, help="who the key belongs to, shown beside its signatures"),
    harness_runs: bool = typer.Option(False, "--harness-runs", help="also sign every harness run made with this key"),
    file: list[Path] = typer.Option([], "--file", help="sign a file (an export): writes FILE.dsse.json beside it"),
    db: Db = None,
) -> None:
    """Sign records (DSSE envelope over an in-toto Statement naming the record's digest)."""
    import json

    from kernelindex.records.canonical import sha256_digest
    from kernelindex.records.signing import sign_record_digest
    from kernelindex.services.signing import sign_records
    from kernelindex.store.evidence.records import EvidenceError, utc_now

    private_key = load_private_key(key)
    for path in file:
        try:
            content_digest = sha256_digest(path.read_bytes())
        except OSError as exc:
            fail(f"{path}: {exc.strerror}")
        envelope = sign_record_digest(private_key, content_digest, EXPORT_KIND, utc_now())
        sidecar = path.with_name(path.name + ".dsse.json")
        sidecar.write_text(json.dumps(envelope, indent=2) + "\n")
        typer.echo(f"signed {path} ({content_digest}) -> {sidecar}")
    wanted = list(digests or [])
    if not wanted and not harness_runs:
        if not file:
            fail("nothing to sign: give record digests, --harness-runs or --file")
        return
    store = open_store_or_fail(db)
    try:
        signed = sign_records(store, wanted, private_key, label, harness_runs=harness_runs)
    except EvidenceError as exc:
        fail(str(exc))
    for digest in signed:
        typer.echo(f"signed {digest}")


def attest(
    run: str = typer.Argument(..., help="the run the attestation concerns: id, digest or unique 8+ hex prefix"),
    key: Path = typer.Option(..., "--key", help="private key that signs the attestation (the attester's identity)"),
    name: str = typer.Option(..., help="attester name shown on the run page"),
    claim: str = typer.Option(
        "reproduced", help="reproduced, could_not_reproduce, environment_note, regression_observed"
    ),
    reproduction: str | None = typer.Option(
        None, help="digest of the harness run that repeated RUN (counts toward its level)"
    ),
    note: str | None = typer.Option(None, help="plain text, up to 4000 characters"),
    value: float | None = typer.Option(None, help="measured value"),
    unit: str | None = typer.Option(None, help="unit of --value (e.g. ns)"),
    db: Db = None,
) -> None:
    """Record a signed attestation about a stored run, locally (no API key: this is the store's owner)."""
    from kernelindex.records.errors import RecordError
    from kernelindex.services.attestations import attest as store_attestation
    from kernelindex.store.evidence.records import EvidenceError
    from kernelindex.store.reads.lookup import LookupFailed

    private_key = load_private_key(key)
    store = open_store_or_fail(db)
    try:
        digest = store_attestation(
            store, run, private_key, name, claim, reproduction=reproduction, note=note, value=value, unit=unit
        )
    except (EvidenceError, RecordError, LookupFailed) as exc:
        fail(str(exc))
    typer.echo(f"attestation {digest} on {run}")


def signature_report(db: str | None) -> dict[str, Any]:
    """Every stored signature re-verified: ``{"valid": n, "invalid": [{record, key, problem}]}``."""
    from kernelindex.store.evidence.records import all_signature_checks

    store = open_store_or_fail(db, read_only=True)
    with store.read() as conn:
        checks = all_signature_checks(conn)
    bad = [{"record": c.record_digest, "key": c.key_id, "problem": c.problem} for c in checks if not c.valid]
    return {"valid": len(checks) - len(bad), "invalid": bad}


def check_signatures(
    db: str | None,
    files: list[Path] | None = None,
    public_keys: list[Path] | None = None,
    records: list[Path] | None = None,
) -> int:
    """Re-verify every stored signature (and signed files against given public keys), offline.

    Prints one line per failure and a summary; returns the number of failures. Called by
    ``kernelindex verify --signatures`` and ``kernelindex verify-signatures``.
    """
    import json

    from kernelindex.records.canonical import digest, sha256_digest
    from kernelindex.records.signing import (
        SignatureError,
        public_key_from_text,
        verify_envelope,
    )
    from kernelindex.services.opening import missing_sqlite_store
    from kernelindex.store import resolve_url

    if (files or records) and missing_sqlite_store(db):  # checking files needs no store: none is made
        typer.echo(f"no store at {resolve_url(db)}: only the given files and records are checked")
        report: dict[str, Any] = {"valid": 0, "invalid": []}
    else:
        report = signature_report(db)
    for bad in report["invalid"]:
        typer.echo(f"BAD signature on {bad['record']} by {bad['key']}: {bad['problem']}")
    failures = len(report["invalid"])
    typer.echo(f"signatures: {report['valid']} valid, {failures} invalid")
    keys = [public_key_from_text(path.read_text()) for path in public_keys or []]
    targets = [(path, False) for path in files or []] + [(path, True) for path in records or []]
    for path, is_record in targets:
        sidecar = path.with_name(path.name + ".dsse.json")
        try:
            envelope = json.loads(sidecar.read_text())
            expected = digest(json.loads(path.read_text())) if is_record else sha256_digest(path.read_bytes())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            failures += 1
            typer.echo(f"BAD {path}: cannot read it or {sidecar.name}: {exc}")
            continue
        for public_key in keys:
            try:
                checked = verify_envelope(envelope, public_key, expected)
            except SignatureError:
                continue
            typer.echo(f"ok {path}: signed by {checked.key_id} at {checked.signed_at}")
            break
        else:
            failures += 1
            typer.echo(f"BAD {path}: no given public key has a valid signature over {expected}")
    return failures


def verify_signatures(
    db: Db = None,
    file: list[Path] = typer.Option([], "--file", help="a signed file to check (its FILE.dsse.json beside it)"),
    record: list[Path] = typer.Option(
        [], "--record", help="a record (JSON) to check, its envelope in RECORD.dsse.json beside it"
    ),
    public_key: list[Path] = typer.Option(
        [], "--public-key", help="public key file(s) trusted for --file and --record"
    ),
) -> None:
    """Check every stored signature, and signed files or records, without any server."""
    if check_signatures(db, file, public_key, record):
        raise typer.Exit(1)
