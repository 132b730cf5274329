"""CLI commands for evidence: keys (signing and API), signing records and exports, local signed
attestations (`attest`), correction requests. Thin: the logic lives in ``kernelindex.store.evidence_store``
and ``kernelindex.records.signing``; heavy imports stay inside the commands so --help stays fast.
"""

from __future__ import annotations

from pathlib import Path

import typer

keys_app = typer.Typer(no_args_is_help=True, add_completion=False, help="Signing keys (runner identities) and API keys.")
corrections_app = typer.Typer(no_args_is_help=True, add_completion=False, help="Correction requests on runs.")

DB_OPTION = typer.Option(None, "--db", help="database URL or SQLite path (default $KERNELINDEX_DATABASE_URL or ./kernelindex.db)")
EXPORT_KIND = "CatalogExport"


def _fail(message: str, code: int = 1) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _load_private_key(path: Path):
    from kernelindex.records.signing import SignatureError, private_key_from_pem

    try:
        return private_key_from_pem(path.read_bytes())
    except OSError as exc:
        _fail(f"{path}: cannot read the key: {exc.strerror}")
    except SignatureError as exc:
        _fail(f"{path}: {exc}")


@keys_app.command("new")
def keys_new(
    name: str = typer.Argument(..., help="file stem: writes NAME.key (private, mode 600) and NAME.pub"),
    directory: Path = typer.Option(Path("."), "--dir", help="folder for the two files"),
) -> None:
    """Make an Ed25519 signing key; its public key is the runner's (or signer's) identity."""
    import os

    from kernelindex.records.signing import key_id, new_private_key, private_key_to_pem, public_key_to_text

    private_path, public_path = directory / f"{name}.key", directory / f"{name}.pub"
    for path in (private_path, public_path):
        if path.exists():
            _fail(f"{path} exists; refusing to overwrite a key")
    key = new_private_key()
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(private_key_to_pem(key))
    public_path.write_text(public_key_to_text(key.public_key()) + "\n")
    typer.echo(f"key id {key_id(key.public_key())}\nprivate {private_path}\npublic  {public_path}")


@keys_app.command("list")
def keys_list(db: str | None = DB_OPTION) -> None:
    """Signing keys this store knows, and API keys (never their tokens)."""
    from sqlalchemy import select

    from kernelindex.store.database import open_store
    from kernelindex.store.evidence_store import list_api_keys
    from kernelindex.store.evidence_tables import signing_keys

    store = open_store(db)
    with store.begin() as conn:
        typer.echo("signing keys:")
        for row in conn.execute(select(signing_keys).order_by(signing_keys.c.seq)):
            typer.echo(f"  {row.key_id}  {row.label or '-'}  since {row.created_at}")
        typer.echo("API keys:")
        for row in list_api_keys(conn):
            state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
            typer.echo(
                f"  {row['key_id']}  {row['label']}  scopes={','.join(row['scopes'])}  "
                f"limit={row['daily_limit']}/day  {state}"
            )


@keys_app.command("api-key")
def keys_api_key(
    label: str = typer.Argument(..., help="who the key is for"),
    scopes: str = typer.Option("attest,report", help="comma-separated: attest, report"),
    daily_limit: int = typer.Option(20, help="writes allowed per rolling 24 hours"),
    db: str | None = DB_OPTION,
) -> None:
    """Make an API key for HTTP writes; the token is printed once and only its hash is kept."""
    from kernelindex.store.api_tokens import parse_scopes
    from kernelindex.store.database import open_store
    from kernelindex.store.evidence_store import EvidenceError, create_api_key

    try:
        wanted = parse_scopes(scopes)
    except ValueError as exc:
        _fail(f"--scopes: {exc}")
    store = open_store(db)
    try:
        with store.begin() as conn:
            token = create_api_key(conn, label, wanted, daily_limit)
    except EvidenceError as exc:
        _fail(str(exc))
    typer.echo(f"API key {token.key_id} ({','.join(sorted(wanted))}, {daily_limit}/day). Token, shown once:")
    typer.echo(token.token)


@keys_app.command("revoke")
def keys_revoke(key_id: str = typer.Argument(..., help="the API key id (16 hex)"), db: str | None = DB_OPTION) -> None:
    """Revoke an API key: later writes with it are refused; what it wrote stays attributed."""
    from kernelindex.store.database import open_store
    from kernelindex.store.evidence_store import EvidenceError, revoke_api_key

    store = open_store(db)
    try:
        with store.begin() as conn:
            revoke_api_key(conn, key_id)
    except EvidenceError as exc:
        _fail(str(exc))
    typer.echo(f"revoked {key_id}")


def sign(
    digests: list[str] = typer.Argument(None, help="digests of stored records to sign"),
    key: Path = typer.Option(..., "--key", help="private key file from `kernelindex keys new`"),
    label: str | None = typer.Option(None, help="who the key belongs to, shown beside its signatures"),
    harness_runs: bool = typer.Option(False, "--harness-runs", help="also sign every harness run made with this key"),
    file: list[Path] = typer.Option([], "--file", help="sign a file (an export): writes FILE.dsse.json beside it"),
    db: str | None = DB_OPTION,
) -> None:
    """Sign records (DSSE envelope over an in-toto Statement naming the record's digest)."""
    import json

    from sqlalchemy import select

    from kernelindex.records.canonical import sha256_digest
    from kernelindex.records.signing import key_id, sign_record_digest
    from kernelindex.store.evidence_store import EvidenceError, sign_stored_record, utc_now

    private_key = _load_private_key(key)
    for path in file:
        try:
            content_digest = sha256_digest(path.read_bytes())
        except OSError as exc:
            _fail(f"{path}: {exc.strerror}")
        envelope = sign_record_digest(private_key, content_digest, EXPORT_KIND, utc_now())
        sidecar = path.with_name(path.name + ".dsse.json")
        sidecar.write_text(json.dumps(envelope, indent=2) + "\n")
        typer.echo(f"signed {path} ({content_digest}) -> {sidecar}")
    wanted = list(digests or [])
    if not wanted and not harness_runs:
        if not file:
            _fail("nothing to sign: give record digests, --harness-runs or --file")
        return
    from kernelindex.store.database import open_store
    from kernelindex.store.tables import runs

    store = open_store(db)
    try:
        with store.begin() as conn:
            if harness_runs:
                mine = key_id(private_key.public_key())
                wanted += [row[0] for row in conn.execute(select(runs.c.run_digest).where(runs.c.runner_id == mine))]
            for digest in wanted:
                sign_stored_record(conn, digest, private_key, label)
                typer.echo(f"signed {digest}")
    except EvidenceError as exc:
        _fail(str(exc))


def attest(
    run: str = typer.Argument(..., help="digest of the run the attestation concerns"),
    key: Path = typer.Option(..., "--key", help="private key that signs the attestation (the attester's identity)"),
    name: str = typer.Option(..., help="attester name shown on the run page"),
    claim: str = typer.Option("reproduced", help="reproduced, could_not_reproduce, environment_note, regression_observed"),
    reproduction: str | None = typer.Option(None, help="digest of the harness run that repeated RUN (counts toward its level)"),
    note: str | None = typer.Option(None, help="plain text, up to 4000 characters"),
    value: float | None = typer.Option(None, help="measured value"),
    unit: str | None = typer.Option(None, help="unit of --value (e.g. ns)"),
    db: str | None = DB_OPTION,
) -> None:
    """Record a signed attestation about a stored run, locally (no API key: this is the store's owner)."""
    from kernelindex.records.attestation import new_attestation
    from kernelindex.records.errors import RecordError
    from kernelindex.records.models import dump_record, record_digest
    from kernelindex.records.signing import key_id, sign_record_digest
    from kernelindex.store.database import open_store
    from kernelindex.store.evidence_store import EvidenceError, add_attestation, record_harness_reproduction, utc_now

    private_key = _load_private_key(key)
    store = open_store(db)
    try:
        with store.begin() as conn:
            if reproduction and claim == "reproduced" and note is None and value is None:
                digest = record_harness_reproduction(conn, run, reproduction, private_key, name)
            else:
                spec = {"claim": claim, "runDigest": run, "observedAt": utc_now(),
                        "attester": {"name": name, "keyId": key_id(private_key.public_key())}}
                optional = {"note": note, "reproductionRunDigest": reproduction,
                            "measured": {"value": value, "unit": unit or ""} if value is not None else None}
                spec.update({k: v for k, v in optional.items() if v is not None})
                record = new_attestation(spec)
                envelope = sign_record_digest(private_key, record_digest(record), "Attestation", utc_now())
                digest = add_attestation(conn, dump_record(record), envelope=envelope, public_key=private_key.public_key())
    except (EvidenceError, RecordError) as exc:
        _fail(str(exc))
    typer.echo(f"attestation {digest} on {run}")


def signature_report(db: str | None) -> dict:
    """Every stored signature re-verified: ``{"valid": n, "invalid": [{record, key, problem}]}``."""
    from kernelindex.store.database import open_store
    from kernelindex.store.evidence_store import all_signature_checks

    store = open_store(db)
    with store.begin() as conn:
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
    from kernelindex.records.signing import SignatureError, public_key_from_text, verify_envelope

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
    db: str | None = DB_OPTION,
    file: list[Path] = typer.Option([], "--file", help="a signed file to check (its FILE.dsse.json beside it)"),
    record: list[Path] = typer.Option([], "--record", help="a record (JSON) to check, its envelope in RECORD.dsse.json beside it"),
    public_key: list[Path] = typer.Option([], "--public-key", help="public key file(s) trusted for --file and --record"),
) -> None:
    """Check every stored signature, and signed files or records, without any server."""
    if check_signatures(db, file, public_key, record):
        raise typer.Exit(1)


@corrections_app.command("list")
def corrections_list(status: str = typer.Option("open", help="open, accepted, rejected or all"), db: str | None = DB_OPTION) -> None:
    """Correction requests waiting for a maintainer (or all of them)."""
    from kernelindex.store.database import open_store
    from kernelindex.store.evidence_store import correction_requests_for

    store = open_store(db)
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
    db: str | None = DB_OPTION,
) -> None:
    """Answer a correction request with a retraction, a superseding run, or a rejection."""
    import json

    from sqlalchemy import select

    from kernelindex.store.database import open_store
    from kernelindex.store.evidence_store import EvidenceError, close_correction_request
    from kernelindex.store.evidence_tables import correction_requests
    from kernelindex.store.rows import RowError
    from kernelindex.store.tables import runs
    from kernelindex.store.writer import Writer

    if sum([retract, supersede_with is not None, reject]) != 1:
        _fail("give exactly one of --retract, --supersede-with BUNDLE, --reject")
    store = open_store(db)
    try:
        with store.begin() as conn:
            request = conn.execute(select(correction_requests).where(correction_requests.c.id == request_id)).first()
            if request is None:
                _fail(f"no correction request {request_id}")
            run_id = conn.execute(select(runs.c.id).where(runs.c.run_digest == request.run_digest)).scalar_one()
            writer = Writer(conn)
            new_digest = None
            if retract:
                writer.retract_run(run_id, reason)
            elif supersede_with is not None:
                bundle = json.loads(supersede_with.read_text())
                if writer.add_run_bundle(bundle, supersedes_id=run_id) is None:
                    _fail(f"{supersede_with}: that run is already stored; a superseding run must be new")
                from kernelindex.records.canonical import digest

                new_digest = digest(bundle["run"])
            close_correction_request(conn, request_id, "rejected" if reject else "accepted", reason, new_digest)
    except (EvidenceError, RowError, ValueError, OSError) as exc:
        _fail(str(exc))
    typer.echo(f"{request_id}: {'rejected' if reject else 'accepted'}")


def register(app: typer.Typer) -> None:
    """Add the evidence commands to the main app (called once from ``kernelindex.cli``)."""
    app.add_typer(keys_app, name="keys")
    app.add_typer(corrections_app, name="corrections")
    app.command("sign")(sign)
    app.command("attest")(attest)
    app.command("verify-signatures")(verify_signatures)
