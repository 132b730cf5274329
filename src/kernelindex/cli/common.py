"""What every command shares: the --db and --json options, opening the store, failing with one
clear line, progress bars and loading signing keys. Heavy imports stay inside the functions so
``kernelindex --help`` stays fast."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

Db = Annotated[
    str | None,
    typer.Option("--db", help="database URL or SQLite file (default: $KERNELINDEX_DATABASE_URL, else ./kernelindex.db)"),
]
AsJson = Annotated[bool, typer.Option("--json", help="machine-readable JSON on stdout")]
AsJsonl = Annotated[bool, typer.Option("--jsonl", help="JSON Lines on stdout: one object per row")]
MAX_SHOWN_PROBLEMS = 20


def stderr():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(lines: list[str] | str, code: int = 1) -> NoReturn:
    """Print each problem as one ``error:`` line on stderr (at most 20) and exit with ``code``."""
    lines = [lines] if isinstance(lines, str) else lines
    err = stderr()
    for line in lines[:MAX_SHOWN_PROBLEMS]:
        err.print(f"error: {line}", markup=False)
    if len(lines) > MAX_SHOWN_PROBLEMS:
        err.print(f"error: ... and {len(lines) - MAX_SHOWN_PROBLEMS} more problems", markup=False)
    raise typer.Exit(code)


def open_store_or_fail(db: str | None):
    """The store at ``db`` (migrated); a clean one-line error instead of a traceback."""
    from sqlalchemy.exc import SQLAlchemyError

    from kernelindex.store import open_store, resolve_url

    try:
        return open_store(db)
    except (SQLAlchemyError, OSError) as exc:
        fail([f"cannot open the store at {resolve_url(db)}: {str(exc).splitlines()[0]}"])


def progress():
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    err = stderr()
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True, disable=not err.is_terminal,
    )


def number(value: float | None) -> str:
    """A stored value as written: 317881 rather than 317881.0, full precision otherwise."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def print_jsonl(rows: list[Any]) -> None:
    """One compact JSON object per line (the stable machine format of listings)."""
    for row in rows:
        typer.echo(json.dumps(row, ensure_ascii=False, default=str, separators=(",", ":")))


def console():
    """A stdout console that never folds identifiers: full width when piped."""
    from rich.console import Console

    out = Console(highlight=False)
    if not out.is_terminal:
        out.width = 200
    return out


def load_private_key(path: Path | str, option: str = "--key"):
    """The Ed25519 private key in ``path``; exits with one line naming the file when it can't be used."""
    from kernelindex.records.signing import SignatureError, private_key_from_pem

    try:
        return private_key_from_pem(Path(path).read_bytes())
    except OSError as exc:
        fail(f"{path} ({option}): cannot read the key: {exc.strerror}")
    except SignatureError as exc:
        fail(f"{path} ({option}): {exc}")
