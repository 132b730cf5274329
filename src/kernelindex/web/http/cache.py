"""Exact caching of rendered pages and API bodies, keyed by the store generation.

Records are immutable and every write bumps the store generation
(:mod:`kernelindex.store.generation`), so an answer rendered at generation G stays right until G
moves: the cache needs no expiry, only a byte budget (least recently used goes first).

- Key: (path, query, host, scheme, UTC date, generation). Pages embed the site's base URL and
  today's date (in citations), so both are part of the key.
- ``ETag`` is a digest of the key (the same in every worker), weak because compression changes
  the bytes but not the meaning; ``If-None-Match`` gets 304.
- A page with a form carries the visitor's anti-forgery token (the HMAC of the visitor's cookie
  nonce, chosen by the outer middleware). The route never sees it: the page is rendered once with
  a random placeholder in the token's place, and each visitor's own token is put in on the way
  out, so no visitor's token is ever stored, let alone sent to another. Such a page is
  ``private``, ``Vary: Cookie``, and its ETag also names the visitor's token, so a 304 never lets
  a visitor keep a copy made with someone else's token.
- An answer that reads or hands out a pagination cursor says until when it holds
  (:func:`kernelindex.web.http.pagination.answer_holds_until`, on the cursors' clock); it is made again
  after that, so a kept page neither revives an expired cursor nor hands out a stale one, and its
  ETag names its bytes (a remade page has a new cursor).
- Only GET answers with status 200, no ``Set-Cookie`` and no ``Authorization`` in the request
  are kept.
- ``Cache-Control``: permalinks by digest (``/r/``, ``/artifacts/``) are immutable; everything
  else may be kept briefly and must be revalidated (the ETag makes that a cheap 304).

Each worker process has its own cache; they agree because each checks the generation on every
request.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelindex.views.common import today
from kernelindex.web.http.input_guards import CSRF_STATE
from kernelindex.web.http.pagination import ANSWER_DEADLINE
from kernelindex.web.settings import BUDGET_ENV, DEFAULT_BUDGET

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "public, max-age=10, must-revalidate"
PERSONAL = "private, no-cache"
PERMALINK_PREFIXES = ("/r/", "/artifacts/")
BYPASS_PREFIXES = ("/static/",)
# CPython's own cost of the objects an entry is made of (measured with sys.getsizeof on 3.11): a bytes
# object's header, a 2-tuple, and the entry with its dicts, list and the key's slot in the LRU order.
BYTES_OBJECT = 33
TUPLE_OF_TWO = 56
ENTRY_OVERHEAD = 1100
# Where compression finds the entry a reply came from: (cache, entry, placeholder, visitor's token).
SCOPE_ENTRY = "kernelindex.cache_entry"
# Headers the cache sets itself, or that belong to one reply only.
_OWN_HEADERS = {b"content-length", b"etag", b"cache-control", b"set-cookie", b"vary", b"date", b"server"}


@dataclass
class Entry:
    """One cached answer: the body with the placeholder (when ``personal``) and its headers."""

    headers: list[tuple[bytes, bytes]]
    body: bytes
    etag: str  # without quotes
    personal: bool
    deadline: float | None = None  # made again after this moment (the cache's clock)
    encoded: dict[str, bytes] = field(default_factory=dict)  # coding -> compressed body (shared entries)
    parts: list[bytes] | None = None  # deflated parts around the placeholder (personal entries)

    @property
    def size(self) -> int:
        """The bytes it holds: body, compressed variants, headers, and the objects holding them."""
        extra = sum(len(v) for v in self.encoded.values()) + sum(len(p) for p in self.parts or ())
        headers = sum(len(k) + len(v) + 2 * BYTES_OBJECT + TUPLE_OF_TWO for k, v in self.headers)
        return len(self.body) + extra + headers + len(self.etag) + ENTRY_OVERHEAD


class LRUBytes:
    """Least-recently-used entries within a byte budget (the event loop is the only user)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._entries: OrderedDict[str, Entry] = OrderedDict()

    def get(self, key: str) -> Entry | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: Entry) -> None:
        if entry.size > self.budget // 8:  # one huge answer must not flush everything else
            return
        self.discard(key)
        self._entries[key] = entry
        self.used += entry.size + len(key)
        self.shrink()

    def grew(self, entry: Entry, extra: int) -> None:
        """An entry gained ``extra`` bytes (a compressed variant)."""
        self.used += extra
        self.shrink()

    def discard(self, key: str) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.used -= old.size + len(key)

    def shrink(self) -> None:
        while self.used > self.budget and self._entries:
            key, old = self._entries.popitem(last=False)
            self.used -= old.size + len(key)

    def __len__(self) -> int:
        return len(self._entries)


def budget_from_env() -> int:
    value = os.environ.get(BUDGET_ENV)
    return int(value) if value else DEFAULT_BUDGET


def matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 weak comparison of an ``If-None-Match`` list with our ETag."""
    if not if_none_match:
        return False
    wanted = etag.removeprefix("W/")
    return any(tag.strip() == "*" or tag.strip().removeprefix("W/") == wanted for tag in if_none_match.split(","))


def cache_control(path: str, personal: bool) -> str:
    if personal:
        return PERSONAL
    return IMMUTABLE if path.startswith(PERMALINK_PREFIXES) else REVALIDATE


class CacheMiddleware:
    """ASGI middleware around the routes (inside the anti-forgery and header middlewares)."""

    def __init__(
        self,
        app: ASGIApp,
        generation: Callable[[], int | None],
        budget: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.app = app
        self.generation = generation
        self.clock = clock  # the clock routes' deadlines are on
        self.entries = LRUBytes(budget_from_env() if budget is None else budget)
        self.placeholder = "ki-token-" + secrets.token_hex(16)  # unguessable: no record can contain it
        self.hits = self.misses = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"].startswith(BYPASS_PREFIXES):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        generation = None if "authorization" in headers else self.generation()
        if generation is None:
            await self._uncached(scope, receive, send)
            return
        key = self._key(scope, headers, generation)
        entry = self.entries.get(key)
        if entry is not None and entry.deadline is not None and self.clock() > entry.deadline:
            self.entries.discard(key)
            entry = None
        if entry is None:
            self.misses += 1
            entry = await self._render(scope, receive, send, key)
            if entry is None:
                return  # not cacheable: already sent as it came
        else:
            self.hits += 1
        await self._reply(scope, send, headers, entry)

    def _key(self, scope: Scope, headers: Headers, generation: int) -> str:
        parts = (
            scope["path"],
            scope.get("query_string", b"").decode("latin-1"),
            headers.get("host", ""),
            scope.get("scheme", "http"),
            today().isoformat(),
            str(generation),
        )
        return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=16).hexdigest()

    def _token(self, scope: Scope) -> str | None:
        return scope.get("state", {}).get(CSRF_STATE)

    async def _render(self, scope: Scope, receive: Receive, send: Send, key: str) -> Entry | None:
        """Run the route with the placeholder token; keep its answer if it may be kept."""
        state = scope.setdefault("state", {})
        token = state.get(CSRF_STATE)
        state[CSRF_STATE] = self.placeholder
        state.pop(ANSWER_DEADLINE, None)
        try:
            start, chunks = await _collect(self.app, scope, receive)
        finally:
            state[CSRF_STATE] = token
        body = b"".join(chunks)
        raw_headers = list(start.get("headers", []))
        placeholder = self.placeholder.encode()
        if start["status"] != 200 or any(name.lower() == b"set-cookie" for name, _ in raw_headers):
            if placeholder in body:  # never send the placeholder itself
                body = body.replace(placeholder, (token or "").encode())
            permanent = start["status"] in (301, 302, 307, 308) and scope["path"].startswith(PERMALINK_PREFIXES)
            raw_headers.append((b"cache-control", (IMMUTABLE if permanent else PERSONAL).encode()))
            await _send_whole(send, start["status"], raw_headers, body)
            return None
        deadline = state.get(ANSWER_DEADLINE)
        etag = key if deadline is None else key + "-" + hashlib.blake2b(body, digest_size=8).hexdigest()
        entry = Entry(
            headers=[(n, v) for n, v in raw_headers if n.lower() not in _OWN_HEADERS],
            body=body,
            etag=etag,
            personal=placeholder in body,
            deadline=deadline,
        )
        self.entries.put(key, entry)
        return entry

    async def _reply(self, scope: Scope, send: Send, headers: Headers, entry: Entry) -> None:
        body, etag = entry.body, entry.etag
        placeholder, token = self.placeholder.encode(), (self._token(scope) or "").encode()
        if entry.personal:
            body = body.replace(placeholder, token)
            etag += "-" + hashlib.blake2b(token, digest_size=6).hexdigest()
        scope[SCOPE_ENTRY] = (self.entries, entry, placeholder, token)
        validators = [
            (b"etag", f'W/"{etag}"'.encode()),
            (b"cache-control", cache_control(scope["path"], entry.personal).encode()),
        ]
        if entry.personal:
            validators.append((b"vary", b"Cookie"))
        if matches(headers.get("if-none-match"), f'W/"{etag}"'):
            await _send_whole(send, 304, validators, b"")
            return
        await _send_whole(send, 200, entry.headers + validators, body)

    async def _uncached(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass through, marking the answer as not to be stored anywhere else either."""

        async def send_private(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"cache-control", PERSONAL.encode())]}
            await send(message)

        await self.app(scope, receive, send_private)


async def _collect(app: ASGIApp, scope: Scope, receive: Receive) -> tuple[Message, list[bytes]]:
    start: Message = {}
    chunks: list[bytes] = []

    async def capture(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, capture)
    return start, chunks


async def _send_whole(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    headers = [(n, v) for n, v in headers if n.lower() != b"content-length"]
    if status != 304:
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
