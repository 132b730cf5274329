"""`kernelindex sync URL`: mirror another KernelIndex-style server's catalog into this store.

``--every 6h`` keeps syncing on that interval (stop it with Ctrl-C). Under systemd or cron one
sync per run does the same, e.g. the crontab line
``0 */6 * * * kernelindex sync https://kernelindex.example --db postgresql://...``.
"""

from __future__ import annotations

import re
import time
from typing import Annotated

import typer

from kernelindex.cli.common import AsJson, Db, check_import_settings, fail, open_store_or_fail, print_json

_INTERVAL = re.compile(r"^(\d+)([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SIZE = re.compile(r"^(\d+)([KMG]?)$")
_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def interval_seconds(text: str) -> int:
    match = _INTERVAL.fullmatch(text.strip())
    if not match or int(match.group(1)) == 0:
        raise typer.BadParameter(f"expected a duration like 30m, 6h or 1d, got {text!r}")
    return int(match.group(1)) * _SECONDS[match.group(2)]


def size_bytes(text: str) -> int:
    match = _SIZE.fullmatch(text.strip().upper())
    if not match or int(match.group(1)) == 0:
        raise typer.BadParameter(f"expected a size like 500M or 4G (bytes, or K, M, G of 1,024), got {text!r}")
    return int(match.group(1)) * _UNIT[match.group(2)]


def sync_command(
    url: Annotated[
        str, typer.Argument(help="base URL of a KernelIndex-style server, e.g. https://kernelindex.example")
    ],
    db: Db = None,
    as_json: AsJson = False,
    every: Annotated[str | None, typer.Option("--every", help="keep syncing at this interval (30m, 6h, 1d)")] = None,
    max_size: Annotated[
        str | None, typer.Option("--max-size", help="refuse an export larger than this (compressed; default 2G)")
    ] = None,
    deadline: Annotated[
        str | None,
        typer.Option("--deadline", help="give up fetching after this long, all requests together (default 30m)"),
    ] = None,
) -> None:
    """Import what is new in the server's newest catalog export (checked against its digest)."""
    period = interval_seconds(every) if every else None
    limits = {}  # only what was given: sync's own defaults stand otherwise
    if max_size:
        limits["max_bytes"] = size_bytes(max_size)
    if deadline:
        limits["deadline"] = interval_seconds(deadline)
    check_import_settings()
    store = open_store_or_fail(db, create=True)
    while True:
        ok = _once(store, url, as_json, limits)
        if period is None:
            raise typer.Exit(0 if ok else 1)
        time.sleep(period)


def _once(store, url: str, as_json: bool, limits: dict) -> bool:
    from kernelindex.records.refusal import Refusal
    from kernelindex.services.sync import sync_catalog
    from kernelindex.store.database import DatabaseError

    try:
        result = sync_catalog(store, url, **limits).result
    except Refusal as exc:  # the sync (SyncFailed) or its import (ImportFailed) refused
        return _refused(exc.lines())
    except DatabaseError as exc:
        return _refused([f"the database refused the import (nothing was stored): {str(exc).splitlines()[0]}"])
    added = sum(result.report.added.values()) if result.report else 0
    if as_json:
        print_json(
            {
                "url": result.url,
                "digest": result.digest,
                "upToDate": result.up_to_date,
                "requests": result.requests,
                "added": dict(result.report.added) if result.report else {},
            }
        )
    elif result.up_to_date:
        typer.echo(f"{result.url}: up to date (export {result.digest})")
    else:
        typer.echo(
            f"{result.url}: export {result.digest}: {added} rows added, "
            f"{sum(result.report.present.values()) if result.report else 0} already present"
        )
    return True


def _refused(lines: list[str]) -> bool:
    """Say why on stderr (as ``fail`` does) and let the caller decide whether to exit."""
    try:
        fail(lines)
    except typer.Exit:
        pass
    return False
