"""What every command shares: the --db and --json options, opening the store, failing with one
clear line, progress bars and loading signing keys. Heavy imports stay inside the functions so
``kernelindex --help`` stays fast."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from kernelindex.records.refusal import Refusal

Db = Annotated[
    str | None,
    typer.Option(
        "--db", help="database URL or SQLite file (default: $KERNELINDEX_DATABASE_URL, else ./kernelindex.db)"
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="machine-readable JSON on stdout")]
AsJsonl = Annotated[bool, typer.Option("--jsonl", help="JSON Lines on stdout: one object per row")]
MAX_SHOWN_PROBLEMS = 20
# the largest count a listing option takes (--limit, --rows, ...): past it a number is a mistake, and SQL
# integers (64 bits) would overflow well before a Python int does
MAX_LIMIT = 1_000_000


MemoryMb = Annotated[
    int, typer.Option("--memory-mb", min=64, max=1 << 22, help="memory limit of each worker process (MiB)")
]
Timeout = Annotated[
    float,
    typer.Option(
        "--timeout", min=1, max=3600, help="seconds per case and process beyond its calls at the reference's pace"
    ),
]


def _blob_root(value: str | None) -> str | None:
    """An existing folder, made absolute here (a Ray worker's working folder is not this one)."""
    if value is None:
        return None
    folder = Path(value).expanduser()
    if not folder.is_dir():
        raise typer.BadParameter(f"{value!r} is no folder")
    return str(folder.resolve())


BlobRoot = Annotated[
    str | None,
    typer.Option(
        "--blob-root",
        callback=_blob_root,
        help="upstream blob root that safetensors inputs' paths start from (FlashInfer-Bench: the trace set's "
        "root); default: $KERNELINDEX_BLOB_ROOT, else the problem folder",
    ),
]
Cases = Annotated[
    list[str] | None,
    typer.Option(
        "--cases", help="case uuids or unique prefixes to run, e.g. --cases 60b6e5ee,21f99877 (all when absent)"
    ),
]


def case_list(values: list[str] | None) -> list[str] | None:
    """``--cases a,b --cases c`` as ``[a, b, c]``; None when not given. An empty value is refused."""
    if not values:
        return None
    cases = [c for text in values for c in text.replace(",", " ").split()]
    if not cases:
        fail("--cases: give case uuids or prefixes, e.g. --cases 60b6e5ee,21f99877", code=2)
    return cases


def problem_folder(problem: str) -> Path:
    """The problem a command names: a problem folder's path, or the name of a pack this package ships
    (its folder's or its definition's). One reading for `cases`, `eval` and `campaign`, so a name one
    takes the others take too. A path that exists but is no problem folder is returned for the problem
    reader to say what it is instead (a FlashInfer-Bench trace set, say); anything else ends the command."""
    from kernelindex.formats.packs import find_pack, is_problem_folder, problem_folders
    from kernelindex.problems import PROBLEMS_DIR

    path = Path(problem)
    if is_problem_folder(path):
        return path
    found = find_pack(PROBLEMS_DIR, problem)
    if found is not None:
        return found
    if path.exists():
        return path
    packs = ", ".join(p.name for p in problem_folders(PROBLEMS_DIR))
    fail(f"{problem}: is not a problem folder (definition.json + workload.jsonl) or a shipped pack's name ({packs})")


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


def open_store_or_fail(db: str | None, create: bool = False, read_only: bool = False):
    """The store at ``db`` (migrated); a clean one-line error instead of a traceback.
    ``create``: this command may make a new SQLite file (see
    :func:`kernelindex.services.opening.store_url_problem`), and says so on stderr. ``read_only``:
    the command only reads, so a store this user may not write is read rather than refused."""
    from kernelindex.services.opening import StoreUnavailable, missing_sqlite_store, open_named_store
    from kernelindex.store import resolve_url

    new = create and missing_sqlite_store(db)
    try:
        store = open_named_store(db, create, read_only)
    except StoreUnavailable as exc:
        fail(str(exc))
    if new:  # making a store is never silent
        stderr().print(f"note: created a new store at {resolve_url(db)}", markup=False)
    return store


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
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )


def out_console():
    """The stdout console: identifiers never fold. Piped output is as wide as its lines (no terminal
    to fit); on a terminal, tables shrink text columns, never identifier columns (see ``id_column``)."""
    import sys

    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 1000)


DIGEST_SHOWN = 19  # "sha256:" and 12 hex characters: a prefix `show`, `rank` and `compare` accept
UUID_WIDTH = 36  # a record id or case id


def id_column(table, name: str, width: int = DIGEST_SHOWN) -> None:
    """A table column holding identifiers ``width`` characters long (digests, ids): kept whole on one
    line; on a narrow terminal the other columns shrink, never this one."""
    table.add_column(name, no_wrap=True, overflow="ignore", min_width=max(width, len(name)))


def human(value: float | None, unit: str | None) -> str:
    """A measured value in human units: 317881 ns → ``317.9 µs``."""
    from kernelindex.records.units import format_value

    return format_value(value, unit)


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


def load_private_key(path: Path | str, option: str = "--key"):
    """The Ed25519 private key in ``path``; exits with one line naming the file when it can't be used."""
    from kernelindex.records.signing import SignatureError, private_key_from_pem

    try:
        return private_key_from_pem(Path(path).read_bytes())
    except OSError as exc:
        fail(f"{path} ({option}): cannot read the key: {exc.strerror}")
    except SignatureError as exc:
        fail(f"{path} ({option}): {exc}")


def check_import_settings() -> None:
    """Refuse a bad $KERNELINDEX_IMPORT_WORKERS before anything is read."""
    from kernelindex.ingest.catalog_lines import worker_count

    try:
        worker_count()
    except ValueError as exc:
        fail(str(exc))


def fail_refusal(exc: Refusal, code: int = 1) -> NoReturn:
    """End the command on a refusal: each of its lines as one ``error:`` line (see :func:`fail`)."""
    fail(exc.lines(), code)
