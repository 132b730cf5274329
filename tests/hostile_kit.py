"""Seeded hostile edits of JSON documents, for the property tests of every reader of outside files.

A test puts one value a careless reader would trip on (a wrong type, an unhashable container, a
number past any real one, an over-long or empty string, null) at one random place of a document, or
renames one key, and checks that the reader either takes the document or refuses it by name.
KERNELINDEX_TEST_SEED repeats a run.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SEED = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))

HOSTILE_VALUES: list[Any] = [
    [1],
    [1, [2]],
    {"a": 1},
    {"a": {}},
    10**30,
    -(2**63) - 1,
    1e308,
    True,
    1.5,
    -1,
    0.0,
    "",
    "x" * 5000,
    "2026-99-99",
    "\x00",
    "\ud800",
    None,
]


def _places(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of every value inside ``value`` (not ``value`` itself)."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        yield (*path, key)
        yield from _places(child, (*path, key))


def hostile_edit(document: Any, rng: random.Random) -> str:
    """Change ``document`` in place at one seeded random place; returns what was done, for messages."""
    places = list(_places(document))
    if not places:
        return "nothing to change"
    place = rng.choice(places)
    parent = document
    for key in place[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and rng.random() < 0.15:
        parent[f"{place[-1]}_renamed"] = parent.pop(place[-1])
        return f"renamed {place}"
    value = rng.choice(HOSTILE_VALUES)
    parent[place[-1]] = value
    return f"{place} = {str(value)[:30]!r}"


def hostile_edit_file(target: Path, rng: random.Random) -> str:
    """:func:`hostile_edit` of a JSON file, or of one random line of a JSON Lines file, in place."""
    if target.suffix == ".jsonl":
        lines = target.read_text().splitlines()
        number = rng.randrange(len(lines))
        document = json.loads(lines[number])
        what = hostile_edit(document, rng)
        lines[number] = json.dumps(document)
        target.write_text("\n".join(lines) + "\n")
        return f"{target.name}:{number + 1} {what}"
    document = json.loads(target.read_text())
    what = hostile_edit(document, rng)
    target.write_text(json.dumps(document))
    return f"{target.name} {what}"
