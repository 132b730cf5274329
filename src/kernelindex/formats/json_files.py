"""Reading the JSON of a problem or solution file strictly, with positions for error messages."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kernelindex.formats.errors import FormatError
from kernelindex.records.strict_json import loads_strict


def line_of(text: str, key: str) -> int | None:
    """Line of the first `"key":` in a JSON document (json gives no positions; this is enough to point)."""
    match = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(path, None, None, "file not found") from None
    except UnicodeDecodeError as exc:
        raise FormatError(path, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_json(path: Path) -> tuple[dict, str]:
    """A file holding one JSON object: the object and its text."""
    text = read_text(path)
    value = parse_json(text, path, None)
    if not isinstance(value, dict):
        raise FormatError(path, 1, None, "must hold a JSON object")
    return value, text


def parse_json(text: str, path: Path, line: int | None) -> Any:
    """``text`` read strictly (records.strict_json): a key given twice, NaN or a lone surrogate
    (which no digest, file or store can hold) is refused here, not taken as json.loads would."""
    try:
        return loads_strict(text)
    except json.JSONDecodeError as exc:
        raise FormatError(path, line or exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:
        raise FormatError(path, line, None, f"invalid JSON: {exc}") from None
