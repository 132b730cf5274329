"""Checks on what a visitor submits, done before anything is parsed deeply or stored.

- JSON nesting is bounded before a body is parsed, so a body of ten thousand ``[`` is a 400,
  not a RecursionError; a body is read strictly (records.strict_json: a key given twice, NaN or
  a lone surrogate is a 400, not silently taken) into one object of known fields.
- Text that carries bidirectional controls or zero-width characters is refused: such text can make
  a page show something other than what is stored (a reordered URL, a hidden word).
- Anti-forgery tokens are an HMAC of the cookie's random nonce under a server secret, so a
  visitor's own cookie value copied into the form field proves nothing. The token travels in the
  request state under ``CSRF_STATE``; the page cache and compression treat it as a secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

from kernelindex.records.strict_json import loads_strict
from kernelindex.web.problems import Problem

MAX_JSON_DEPTH = 32
CSRF_STATE = "csrf_token"  # templates read it as request.state.csrf_token
INVISIBLE = {
    "\u061c": "ARABIC LETTER MARK",
    "\u200e": "LEFT-TO-RIGHT MARK",
    "\u200f": "RIGHT-TO-LEFT MARK",
    "\u202a": "LEFT-TO-RIGHT EMBEDDING",
    "\u202b": "RIGHT-TO-LEFT EMBEDDING",
    "\u202c": "POP DIRECTIONAL FORMATTING",
    "\u202d": "LEFT-TO-RIGHT OVERRIDE",
    "\u202e": "RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "LEFT-TO-RIGHT ISOLATE",
    "\u2067": "RIGHT-TO-LEFT ISOLATE",
    "\u2068": "FIRST STRONG ISOLATE",
    "\u2069": "POP DIRECTIONAL ISOLATE",
    "\u200b": "ZERO WIDTH SPACE",
    "\u200c": "ZERO WIDTH NON-JOINER",
    "\u200d": "ZERO WIDTH JOINER",
    "\u2060": "WORD JOINER",
    "\ufeff": "ZERO WIDTH NO-BREAK SPACE",
}


def check_json_depth(body: bytes, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse a body whose arrays/objects nest deeper than ``limit`` (brackets inside strings don't count)."""
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                raise Problem(400, "too-deep", f"JSON body nests deeper than {limit} levels", limit=limit)
        elif byte in (0x5D, 0x7D):
            depth -= 1


def check_visible_text(value: Any, where: str) -> None:
    """Refuse any string in ``value`` (walked through lists and objects) holding an invisible control."""
    if isinstance(value, str):
        for ch in value:
            if ch in INVISIBLE:
                raise Problem(
                    422,
                    "invisible-character",
                    f"{where}: contains U+{ord(ch):04X} {INVISIBLE[ch]}, which would make the shown text "
                    "differ from the stored text; remove it",
                    field=where,
                )
    elif isinstance(value, dict):
        for key, item in value.items():
            check_visible_text(key, where)
            check_visible_text(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_visible_text(item, f"{where}[{i}]")


def csrf_field_token(secret: bytes, nonce: str) -> str:
    """The form field value that goes with the cookie ``nonce``: only the server can make it."""
    mac = hmac.new(secret, b"kernelindex-csrf:" + nonce.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def csrf_matches(secret: bytes, nonce: str | None, token: str | None) -> bool:
    if not nonce or not token:
        return False
    return hmac.compare_digest(csrf_field_token(secret, nonce), token)


def json_object(body: bytes, allowed: set[str] | None = None) -> dict[str, Any]:
    """A request body as one JSON object whose fields are all in ``allowed`` (any, if None), or
    the 400 that says why not. Bound its depth first (:func:`check_json_depth`)."""
    try:
        data = loads_strict(body)
    except ValueError as exc:  # UnicodeDecodeError and json's errors included
        raise Problem(400, "malformed-body", f"body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise Problem(400, "malformed-body", "body must be a JSON object")
    unknown = sorted(set(data) - allowed) if allowed is not None else []
    if unknown and allowed is not None:
        raise Problem(400, "unknown-field", f"unknown field(s) {unknown}; allowed: {sorted(allowed)}", field=unknown[0])
    return data
