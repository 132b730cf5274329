"""``kernelindex log``: the transparency log's checkpoint, and proofs checked here, not trusted.

``log checkpoint`` prints the current signed checkpoint (the C2SP note; ``--json`` adds its root
and verifier key: save that to check against later). ``log prove DIGEST`` proves that a record is
in the current checkpoint; ``log check --checkpoint FILE`` proves that the log now extends a
checkpoint saved earlier. Both check every signature and hash themselves, with the verifier key
given (``--verifier-key``) or the one saved with the checkpoint, and exit 1 when a proof fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from kernelindex.cli.common import AsJson, Db, fail, open_store_or_fail, print_json
from kernelindex.cli.reads import Server
from kernelindex.records.checkpoint import CheckpointError
from kernelindex.views.log_reads import LocalLogReads, LogReads, RemoteLogReads, check_extends, prove

log_app = typer.Typer(no_args_is_help=True, help="The transparency log: checkpoints and proofs.")

VerifierKey = Annotated[
    str | None,
    typer.Option(
        "--verifier-key", help="the log's verifier key (name+hash+key) to trust; default: the one saved/named"
    ),
]


@contextmanager
def log_reads(db: str | None, server: str | None) -> Iterator[LogReads]:
    from kernelindex.client import ApiError, Client
    from kernelindex.records.refusal import Refusal

    if server and db:
        fail("give --db or --server, not both", code=2)
    client = None
    try:
        if server:
            try:
                client = Client(server)
            except ValueError as exc:
                fail(f"--server: {exc}", code=2)
            yield RemoteLogReads(client)
        else:
            yield LocalLogReads(open_store_or_fail(db))
    except CheckpointError as exc:
        fail(f"proof failed: {exc}")
    except ApiError as exc:
        fail(exc.detail if exc.status else f"{server}: {exc.detail}")
    except Refusal as exc:
        fail(exc.message)
    finally:
        if client is not None:
            client.close()


@log_app.command("checkpoint")
def checkpoint_command(db: Db = None, server: Server = None, as_json: AsJson = False) -> None:
    """Print the log's current signed checkpoint (--json: with its root hash and verifier key)."""
    with log_reads(db, server) as reads:
        answer = reads.checkpoint()
    if as_json:
        print_json(answer)
    else:
        typer.echo(answer["note"], nl=False)


@log_app.command("prove")
def prove_command(
    digest: Annotated[str, typer.Argument(help="the record's content digest (sha256:…)")],
    db: Db = None,
    server: Server = None,
    verifier_key: VerifierKey = None,
    as_json: AsJson = False,
) -> None:
    """Prove that the record with DIGEST is in the current checkpoint; exit 1 if it is not."""
    with log_reads(db, server) as reads:
        result = prove(reads, digest.strip(), verifier_key)
    if as_json:
        print_json(result)
    else:
        typer.echo(
            f"{result['digest']}: leaf {result['leafIndex']} ({result['table']}) of {result['treeSize']} "
            f"in {result['origin']}, root {result['rootHash']}: inclusion proof verified"
        )


def _saved(path: Path, verifier_key: str | None) -> tuple[str, str]:
    """(note, verifier key) of a saved checkpoint: ``log checkpoint --json`` output, or a bare note."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"--checkpoint {path}: cannot read it ({exc})", code=2)
    note, key = text, verifier_key
    if text.lstrip().startswith("{"):
        try:
            saved = json.loads(text)
            note, key = str(saved["note"]), verifier_key or str(saved["verifierKey"])
        except (ValueError, KeyError, TypeError):
            fail(f"--checkpoint {path}: not the JSON of `kernelindex log checkpoint --json`", code=2)
    if not key:
        fail(f"--checkpoint {path} is a bare note: give --verifier-key to check it with", code=2)
    return note, key


@log_app.command("check")
def check_command(
    checkpoint: Annotated[
        Path, typer.Option("--checkpoint", help="a checkpoint saved earlier (log checkpoint --json)")
    ],
    db: Db = None,
    server: Server = None,
    verifier_key: VerifierKey = None,
    update: Annotated[bool, typer.Option("--update", help="once proved, save the current checkpoint there")] = False,
    as_json: AsJson = False,
) -> None:
    """Prove that the log's current tree extends a saved checkpoint; exit 1 on a fork or a rewrite."""
    note, key = _saved(checkpoint, verifier_key)
    with log_reads(db, server) as reads:
        old, new, answer = check_extends(reads, note, key)
    if update:
        checkpoint.write_text(json.dumps(answer, indent=2) + "\n", encoding="utf-8")
    result = {"from": old.size, "to": new.size, "origin": new.origin, "rootHash": new.root.hex(), "consistent": True}
    if as_json:
        print_json(result)
    else:
        typer.echo(f"{new.origin}: the tree of {new.size} leaves extends the saved one of {old.size}: consistent")
