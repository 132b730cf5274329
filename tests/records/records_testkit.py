"""Helpers for the record tests: our own fixtures and a way to change one field of a record."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
DELETE = object()


def fixture(name: str) -> dict[str, Any]:
    """A hand-written valid record from ``fixtures/<name>.json`` (a fresh copy each call)."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def all_fixtures() -> dict[str, dict[str, Any]]:
    return {path.stem: fixture(path.stem) for path in sorted(FIXTURES.glob("*.json"))}


def _steps(path: str) -> list[str | int]:
    """``spec.inputs[0].tensor`` -> ["spec", "inputs", 0, "tensor"]."""
    return [int(part) if part.isdigit() else part for part in re.findall(r"[^.\[\]]+", path)]


def changed(record: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``record`` with the field at ``path`` set to ``value`` (or removed with DELETE)."""
    result = copy.deepcopy(record)
    *parents, last = _steps(path)
    target: Any = result
    for step in parents:
        target = target[step]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return result
