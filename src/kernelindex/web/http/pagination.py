"""Opaque, signed cursors for keyset pagination.

A cursor names the last item of the previous page, the listing it belongs to and when it was
issued; it is signed with the app's key so a hand-made or truncated cursor is a 400 problem rather
than a wrong page, and it expires after ``CURSOR_TTL_S`` so a stale position is never replayed.

A kept (cached) answer must not outlive its cursors either: an answer that reads a cursor holds
until that cursor expires, and one that hands a cursor out holds for ``REISSUE_S`` (so the cursor a
visitor receives always has most of its life left). Routes say so through :func:`answer_holds_until`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from kernelindex.web.problems import Problem

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
CURSOR_TTL_S = 24 * 3600
REISSUE_S = CURSOR_TTL_S // 24
ANSWER_DEADLINE = "kernelindex.answer_deadline"  # scope state: until when (the cursors' clock) an answer holds


class Cursors:
    def __init__(self, key: bytes, *, ttl_s: int = CURSOR_TTL_S, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._ttl_s = ttl_s
        self._clock = clock

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:16]

    def now(self) -> float:
        return self._clock()

    def encode(self, listing: str, after: Any) -> str:
        payload = json.dumps({"l": listing, "a": after, "t": int(self._clock())}, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(self._sign(payload) + payload).decode().rstrip("=")

    def read(self, listing: str, cursor: str) -> tuple[Any, int]:
        """The position ``cursor`` names in ``listing``, and when the cursor expires (this clock)."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError):
            raise _bad(cursor, "it is not base64url") from None
        sig, payload = raw[:16], raw[16:]
        if len(sig) < 16 or not hmac.compare_digest(sig, self._sign(payload)):
            raise _bad(cursor, "its signature does not match (was it edited or made by hand?)")
        # The default key is derived from the store URL, so a signature proves no secret: check the shape too.
        try:
            data = json.loads(payload)
        except ValueError:
            raise _bad(cursor, "its payload is not JSON") from None
        if not isinstance(data, dict) or "a" not in data:
            raise _bad(cursor, "its payload is not a cursor")
        if data.get("l") != listing:
            raise _bad(cursor, f"it belongs to the listing {data.get('l')!r}, not {listing!r}")
        issued = data.get("t")
        if type(issued) is not int or not 0 <= self._clock() - issued <= self._ttl_s:
            raise _bad(cursor, f"it has expired (cursors last {self._ttl_s // 3600} h); start from the first page")
        after = data["a"]
        if type(after) is not int or not 0 <= after < 2**63:
            raise _bad(cursor, "it does not name a position in this listing")
        return after, issued + self._ttl_s


def answer_holds_until(scope: MutableMapping[str, Any], deadline: float) -> None:
    """Say that the answer being made is right only until ``deadline`` (the earliest such moment wins)."""
    state = scope.setdefault("state", {})
    earlier = state.get(ANSWER_DEADLINE)
    state[ANSWER_DEADLINE] = deadline if earlier is None else min(earlier, deadline)


def _bad(cursor: str, why: str) -> Problem:
    shown = cursor if len(cursor) <= 40 else cursor[:40] + "…"
    return Problem(400, "bad-cursor", f"cursor {shown!r} is not valid: {why}", parameter="cursor")
