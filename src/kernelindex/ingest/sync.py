"""``kernelindex sync URL``: bring this store up to date with a KernelIndex-style server's catalog export.

Two small requests answer the usual case: ``/api/v1/exports/latest.json`` names the newest export's
digest, and when it equals the digest this store last synced from that server nothing else is
fetched. Otherwise the export (``/api/v1/exports/catalog.jsonl.zst``, redirects followed) is
streamed to a temporary file while it is hashed, checked against every digest the server states
(the pointer, the ``X-Content-Digest`` header, the digest in the file's name) and imported: the
import is idempotent, so only rows not stored yet are added. Anything wrong (HTML instead of an
export, a digest that does not match, a cut-off download, 404, a redirect loop) refuses the sync
with a message naming the URL, and the store is left as it was. Before any of that, the server's
transparency log must extend the checkpoint of it this store kept last time
(:mod:`kernelindex.ingest.log_witness`): a rewritten mirror is refused.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin

import httpx

from kernelindex.client import Client
from kernelindex.ingest.catalog import ImportReport, import_catalog
from kernelindex.ingest.jsonlines import ZSTD_MAGIC
from kernelindex.ingest.log_witness import CHECKPOINT, LogRefused, Seen, check_mirror
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.records.refusal import Refusal
from kernelindex.records.strict_json import loads_strict
from kernelindex.store.database import JoinedStore, Store
from kernelindex.store.reads.refresh import last_synced_digest
from kernelindex.store.transparency.witness import remember

if TYPE_CHECKING:
    from sqlalchemy import Connection

POINTER = "/api/v1/exports/latest.json"
EXPORT = "/api/v1/exports/catalog.jsonl.zst"
MAX_REDIRECTS = 5
# compressed bytes a sync downloads at most (the public export is ~2.3 MiB): a server that streams on
# and on is refused before it fills the disk; ``sync(max_bytes=...)`` or ``--max-size`` lifts it
MAX_DOWNLOAD = 2 << 30
MAX_POINTER = 64 << 10  # bytes of latest.json read at most (ours is ~200)
# seconds one sync may spend fetching, all requests together: a server that trickles its bytes
# (each read inside the read timeout) would otherwise hold a sync, and a --every loop, for ever
DEADLINE = 30 * 60
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_NAMED = re.compile(r"([0-9a-f]{64})\.jsonl\.zst$")
# the export's bytes as stored (their digest is what servers state), whatever its type
_AS_STORED = {"Accept": "*/*", "Accept-Encoding": "identity"}


class SyncFailed(Refusal):
    """The sync was refused; nothing was stored."""


@dataclass
class _Deadline:
    """When the fetching must be done by; each request's reads wait at most until then."""

    seconds: float
    read_timeout: float
    end: float = field(init=False)

    def __post_init__(self) -> None:
        self.end = time.monotonic() + self.seconds

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(max(0.001, min(self.read_timeout, self.end - time.monotonic())))

    def check(self, url: str) -> None:
        if time.monotonic() > self.end:
            raise SyncFailed(
                f"{url}: not done after {self.seconds:g} s, the most a sync may take (a server sending too slowly?)"
            )


@dataclass
class SyncResult:
    url: str
    digest: str
    up_to_date: bool
    requests: int
    report: ImportReport | None = None


@contextmanager
def _refused_on_http_errors(url: str, deadline: _Deadline, broke: str | None = None) -> Iterator[None]:
    """httpx's errors while fetching ``url`` as refusals: a redirect loop or the sync's deadline by
    name, any other error with its kind (``broke``: what it means for this fetch, e.g. a download
    cut short)."""
    try:
        yield
    except httpx.TimeoutException:
        deadline.check(url)  # the last read waited until the sync's deadline
        raise SyncFailed(f"{url}: {broke or 'no answer'} (no data for {deadline.read_timeout:g} s)") from None
    except httpx.TooManyRedirects:
        raise SyncFailed(f"{url}: too many redirects (a redirect loop?)") from None
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise SyncFailed(f"{url}: {broke} ({error})" if broke else f"{url}: {error}") from None


def _pointer(api: Client, base: str, deadline: _Deadline) -> tuple[str | None, str | None]:
    """(digest, export URL) from ``latest.json``; (None, None) when the server has no pointer. At
    most :data:`MAX_POINTER` bytes of it are read: a pointer that streams on is refused."""
    url = base + POINTER
    with _refused_on_http_errors(url, deadline), api.download(url, timeout=deadline.timeout()) as response:
        if response.status_code == 404:
            return None, None
        if response.status_code != 200:
            raise SyncFailed(f"{url}: HTTP {response.status_code}")
        kind = response.headers.get("content-type", "")
        if "json" not in kind:
            raise SyncFailed(f"{url}: serves {kind or 'no content type'}, not JSON")
        text = b""
        for chunk in response.iter_bytes():
            deadline.check(url)
            text += chunk
            if len(text) > MAX_POINTER:
                raise SyncFailed(f"{url}: more than {MAX_POINTER} bytes, not a pointer to an export")
        final = str(response.url)
    try:
        body = loads_strict(text)
    except ValueError as exc:
        raise SyncFailed(f"{url}: not JSON ({exc})") from None
    digest = body.get("digest") if isinstance(body, dict) else None
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise SyncFailed(f"{url}: field digest: expected 'sha256:<64 hex>', got {str(digest)[:80]!r}")
    target = body.get("url")
    if target is not None and not isinstance(target, str):
        raise SyncFailed(f"{url}: field url: expected a string")
    return digest, urljoin(final, target) if target else None


def _download(api: Client, url: str, into: Path, max_bytes: int, deadline: _Deadline) -> tuple[str, str, list[str]]:
    """Stream ``url`` to ``into``; (sha256 digest, final URL, digests the server stated for it).
    Refused past ``max_bytes``: at once when the server says the length, else as the bytes come."""
    sha = hashlib.sha256()
    # the bytes as stored (their digest is what servers state): no transfer coding asked for, and
    # none accepted, so what is counted against the limit is what is written; an error mid-body
    # means the download is incomplete
    with (
        _refused_on_http_errors(url, deadline, "the download broke off"),
        api.download(url, headers=_AS_STORED, timeout=deadline.timeout()) as response,
    ):
        if response.status_code != 200:
            raise SyncFailed(f"{response.url}: HTTP {response.status_code}")
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            coding = response.headers["content-encoding"]
            raise SyncFailed(f"{response.url}: sent Content-Encoding {coding} though none was asked for")
        kind = response.headers.get("content-type", "")
        if "html" in kind or "json" in kind:
            raise SyncFailed(f"{response.url}: serves {kind}, not a catalog export (.jsonl.zst)")
        stated = [response.headers[h] for h in ("x-content-digest",) if h in response.headers]
        named = _NAMED.search(response.url.path)
        if named:
            stated.append("sha256:" + named.group(1))
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise SyncFailed(f"{response.url}: the export is {declared} bytes, over the limit of {max_bytes}")
        size = 0
        try:
            with open(into, "wb") as out:
                for chunk in response.iter_raw():  # as the bytes come, so a trickle meets the deadline
                    deadline.check(str(response.url))
                    size += len(chunk)
                    if size > max_bytes:
                        raise SyncFailed(f"{response.url}: the download passed {max_bytes} bytes, the limit")
                    sha.update(chunk)
                    out.write(chunk)
        except OSError as exc:  # a full disk: a refusal like any other, so a --every loop goes on
            raise SyncFailed(f"{response.url}: the download could not be kept ({exc.strerror})") from None
        final = str(response.url)
    return "sha256:" + sha.hexdigest(), final, stated


def _checked_log(api: Client, base: str, conn: Connection, clock: _Deadline) -> Seen | None:
    """The mirror's checkpoint, proved to extend the one kept (see :mod:`kernelindex.ingest.log_witness`)."""
    with _refused_on_http_errors(base + CHECKPOINT, clock):
        try:
            return check_mirror(api, base, conn, clock.timeout())
        except LogRefused as exc:
            raise SyncFailed(str(exc)) from None


def _keep(store: Store, base: str, seen: Seen | None) -> None:
    if seen is not None:
        with store.begin() as conn:
            remember(conn, base, seen.size, seen.note, seen.verifier_key)


def sync(
    store: Store,
    url: str,
    *,
    timeout: float = 120.0,
    max_bytes: int = MAX_DOWNLOAD,
    deadline: float = DEADLINE,
    after_import: Callable[[Connection], object] | None = None,
) -> SyncResult:
    """Import what is new in the newest export of the server at ``url`` (raises :class:`SyncFailed`);
    an export of more than ``max_bytes`` (compressed) is refused, and so is fetching that takes more
    than ``deadline`` seconds in all (``timeout``: the longest wait for one read).

    The download happens outside any transaction; the import, then ``after_import`` (a use case's
    own step, such as recording leader changes), run in one."""
    base = url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise SyncFailed(f"{url}: not an http(s) URL")
    try:  # no API key: a sync origin is any server, and the export is public
        api = Client(base, api_key="", timeout=timeout, retries=0, follow_redirects=True, max_redirects=MAX_REDIRECTS)
    except ValueError as exc:
        raise SyncFailed(str(exc)) from None
    with api:
        clock = _Deadline(deadline, timeout)
        expected, target = _pointer(api, base, clock)
        with store.read() as conn:
            last = last_synced_digest(conn, base)
            seen = _checked_log(api, base, conn, clock)
        asked = 1 if seen is None else 2  # the pointer, and the log's checkpoint where it has one
        if expected is not None and expected == last:
            _keep(store, base, seen)
            return SyncResult(base, expected, up_to_date=True, requests=asked)
        try:
            scratch_folder = tempfile.TemporaryDirectory(prefix="kernelindex-sync-")
        except OSError as exc:
            raise SyncFailed(f"{base}: no folder for the download ({exc.strerror}: {exc.filename})") from None
        with scratch_folder as scratch:
            path = Path(scratch) / "catalog.jsonl.zst"
            got, final, stated = _download(api, target or base + EXPORT, path, max_bytes, clock)
            claims = ([expected] if expected else []) + stated
            if not claims:
                raise SyncFailed(
                    f"{final}: the server states no digest for its export (latest.json, "
                    "X-Content-Digest or a digest-named file), so the download cannot be checked"
                )
            for claim in claims:
                if claim != got:
                    raise SyncFailed(
                        f"{final}: digest mismatch: the server says {claim}, the {path.stat().st_size} "
                        f"bytes downloaded hash to {got} (a truncated or altered download)"
                    )
            with open(path, "rb") as f:
                head = f.read(4)
            if head != ZSTD_MAGIC:
                raise SyncFailed(f"{final}: not a catalog export (the bytes are not zstd: {head[:4]!r})")
            if got == last:
                _keep(store, base, seen)
                return SyncResult(base, got, up_to_date=True, requests=asked + 1)
            try:
                with store.begin(bulk=True) as conn:
                    report = import_catalog(JoinedStore(conn), path, origin=base, export_digest=got)
                    if after_import is not None:
                        after_import(conn)
                    if seen is not None:
                        remember(conn, base, seen.size, seen.note, seen.verifier_key)
            except ImportFailed as exc:
                raise ImportFailed([ImportProblem(final, p.line, p.field, p.reason) for p in exc.problems]) from None
    return SyncResult(base, got, up_to_date=False, requests=asked + 1, report=report)
