"""What ``sync`` checks of a mirrored server's transparency log before it imports anything.

The first sync from a server keeps its signed checkpoint and verifier key (trust on first use).
Every later sync fetches the server's current checkpoint, opens it with the key kept (a new key
is refused: another log), and proves with an RFC 9162 consistency proof that the tree only grew
since the checkpoint kept; a smaller tree, a failed proof, or a server that stopped publishing its
log refuses the sync with nothing stored. A server that never published a log is synced as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from kernelindex.records.checkpoint import CheckpointError, extension_answer, open_checkpoint
from kernelindex.records.strict_json import loads_strict
from kernelindex.store.transparency.witness import last_seen

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from kernelindex.client import Client

CHECKPOINT = "/api/v1/log/checkpoint"
CONSISTENCY = "/api/v1/log/proof/consistency"
MAX_ANSWER = 1 << 20


@dataclass(frozen=True)
class Seen:
    """A checkpoint proved to extend the one kept: what to keep once the import commits."""

    size: int
    note: str
    verifier_key: str


class LogRefused(Exception):
    """The mirror's log does not extend what this store saw of it (the message says how)."""


def _get(api: Client, url: str, params: dict[str, Any] | None, timeout) -> dict[str, Any] | None:
    where = f"{url}?{urlencode(params)}" if params else url
    with api.download(where, timeout=timeout) as response:
        response.read()
    if response.status_code == 404:
        return None
    if response.status_code != 200 or len(response.content) > MAX_ANSWER:
        raise LogRefused(f"{url}: HTTP {response.status_code}")
    try:
        body = loads_strict(response.content)
    except ValueError as exc:
        raise LogRefused(f"{url}: not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise LogRefused(f"{url}: not a JSON object")
    return body


def check_mirror(api: Client, base: str, conn: Connection, timeout) -> Seen | None:
    """The server's checkpoint, proved to extend the one kept (None: the server has no log)."""
    answer = _get(api, base + CHECKPOINT, None, timeout)
    kept = last_seen(conn, base)
    if answer is None:
        if kept is not None:
            raise LogRefused(f"{base}{CHECKPOINT}: gone, though this store kept its checkpoint of {kept.size} leaves")
        return None
    try:
        key = kept.verifier_key if kept is not None else str(answer.get("verifierKey", ""))
        new = open_checkpoint(str(answer.get("note", "")), key)
        if kept is not None:
            old = open_checkpoint(kept.note, key)
            proof = None
            if 0 < old.size < new.size:
                proof = _get(api, base + CONSISTENCY, {"from": old.size, "to": new.size}, timeout)
                if proof is None:
                    raise LogRefused(f"{base}{CONSISTENCY}: no proof from {old.size} to {new.size} leaves")
            extension_answer(kept.note, answer, proof, key)
    except CheckpointError as exc:
        raise LogRefused(f"{base}: the mirror's log was rewritten or forked: {exc}") from None
    return Seen(new.size, str(answer["note"]), key)
