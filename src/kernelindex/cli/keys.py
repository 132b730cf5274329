"""`kernelindex keys`: signing keys (runner identities) and API keys."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelindex.cli.common import Db, fail, open_store_or_fail

keys_app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Signing keys (runner identities) and API keys."
)


@keys_app.command("new")
def keys_new(
    name: str = typer.Argument(..., help="file stem: writes NAME.key (private, mode 600) and NAME.pub"),
    directory: Path = typer.Option(Path("."), "--dir", help="folder for the two files"),
) -> None:
    """Make an Ed25519 signing key; its public key is the runner's (or signer's) identity."""
    import os

    from kernelindex.records.signing import (
        key_id,
        new_private_key,
        private_key_to_pem,
        public_key_to_text,
    )

    private_path, public_path = directory / f"{name}.key", directory / f"{name}.pub"
    for path in (private_path, public_path):
        if path.exists():
            fail(f"{path} exists; refusing to overwrite a key")
    key = new_private_key()
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(private_key_to_pem(key))
    public_path.write_text(public_key_to_text(key.public_key()) + "\n")
    typer.echo(f"key id {key_id(key.public_key())}\nprivate {private_path}\npublic  {public_path}")


@keys_app.command("list")
def keys_list(db: Db = None) -> None:
    """Signing keys this store knows, and API keys (never their tokens)."""
    from kernelindex.store.evidence.records import list_api_keys
    from kernelindex.store.reads.keys import list_signing_keys

    store = open_store_or_fail(db, create=True)
    with store.begin() as conn:
        typer.echo("signing keys:")
        for row in list_signing_keys(conn):
            typer.echo(f"  {row.key_id}  {row.label or '-'}  since {row.created_at}")
        typer.echo("API keys:")
        for key in list_api_keys(conn):
            state = f"revoked {key['revoked_at']}" if key["revoked_at"] else "active"
            typer.echo(
                f"  {key['key_id']}  {key['label']}  scopes={','.join(key['scopes'])}  "
                f"limit={key['daily_limit']}/day  {state}"
            )


@keys_app.command("api-key")
def keys_api_key(
    label: str = typer.Argument(..., help="who the key is for"),
    scopes: str = typer.Option("attest,report", help="comma-separated: attest, report, submit (rerun requests)"),
    daily_limit: int = typer.Option(20, help="writes allowed per rolling 24 hours"),
    db: Db = None,
) -> None:
    """Make an API key for HTTP writes; the token is printed once and only its hash is kept."""
    from kernelindex.services.keys import create_api_key
    from kernelindex.store.evidence.api_tokens import parse_scopes
    from kernelindex.store.evidence.records import EvidenceError

    try:
        wanted = parse_scopes(scopes)
    except ValueError as exc:
        fail(f"--scopes: {exc}")
    store = open_store_or_fail(db, create=True)
    try:
        token = create_api_key(store, label, wanted, daily_limit)
    except EvidenceError as exc:
        fail(str(exc))
    typer.echo(f"API key {token.key_id} ({','.join(sorted(wanted))}, {daily_limit}/day). Token, shown once:")
    typer.echo(token.token)


@keys_app.command("revoke")
def keys_revoke(key_id: str = typer.Argument(..., help="the API key id (16 hex)"), db: Db = None) -> None:
    """Revoke an API key: later writes with it are refused; what it wrote stays attributed."""
    from kernelindex.services.keys import revoke_api_key
    from kernelindex.store.evidence.records import EvidenceError

    store = open_store_or_fail(db, create=True)
    try:
        revoke_api_key(store, key_id)
    except EvidenceError as exc:
        fail(str(exc))
    typer.echo(f"revoked {key_id}")
