"""Strict JSON reading: one parser for every document from outside (catalog lines, upstream
snapshots, run bundles, trace lines, problem and solution files, request bodies).

``json.loads`` takes a key given twice (the last silently wins, so a reader of the text and the
program see different documents), NaN and Infinity (not JSON), 1e400 (read as infinity), and text
no store can keep (NUL, lone surrogates); :func:`loads_strict` refuses each by name.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

# bytes one line of JSON Lines may hold (a catalog export's, as the importer reads it and as the
# client streams it): the public export's longest is under 10 KiB; past this a line is refused
# before it is held whole, so a hostile file or server (a zstd bomb, a line with no end) cannot take
# the reader's memory
MAX_LINE = 16 << 20
# levels of nesting a document may hold: what is read must also be written (digests, JSON columns, a
# worker's hand-back) by the standard library's encoder, with Python's stack to spare
MAX_DEPTH = 512


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r} in one JSON object")
            seen.add(key)
    return obj


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


# Escapes that decode to text no store can keep: NUL (PostgreSQL refuses it) and lone UTF-16 surrogates.
_ODD_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _no_odd_text(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if "\x00" in item:
                raise ValueError(f"the string {item[:40]!r} holds a NUL character (\\u0000)")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"the string {item[:40]!r} holds a lone UTF-16 surrogate") from None


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` that refuses a key given twice in one object (the last would silently win),
    the NaN/Infinity (and 1e400) that Python would otherwise accept, text no store can hold, and
    nesting deeper than :data:`MAX_DEPTH`.

    Fast path: text that orjson parses and writes back byte for byte (compact JSON, as exports are)
    cannot hold a key twice, a constant or an out-of-range number, so only the escapes are looked
    at; anything else takes the slow path, which names what is wrong."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        value = orjson.loads(raw)
        round_trips = orjson.dumps(value) == raw
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # it writes 255 levels, reads 1,024
        round_trips = False
    if not round_trips:
        try:
            value = json.loads(
                raw.decode("utf-8", "surrogatepass"),  # as text: json.loads would take a BOM in bytes
                object_pairs_hook=_no_duplicate_keys,
                parse_constant=_no_constants,
                parse_float=_finite,
            )
        except RecursionError:
            raise ValueError("nested too deeply") from None
        if _depth(value) > MAX_DEPTH:  # one limit, however deep the caller's stack already is
            raise ValueError("nested too deeply")
    if _ODD_ESCAPE.search(raw):
        _no_odd_text(value)
    return value


def _depth(value: Any) -> int:
    """Levels of objects and arrays in ``value`` (``{"a": 1}``: one)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest
