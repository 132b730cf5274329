"""JSON and YAML text to plain data, refusing what the record format forbids.

Both standard parsers silently keep the last of two equal keys in an object, so a record could
say one thing to a reader and hash as another; here a duplicate key is an error naming the key
and its line. YAML timestamps stay strings: a record's timestamp is hashed as written.
Pure functions on strings: reading files is the caller's business.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from kernelindex.records.errors import RecordError


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_json(text: str, where: str = "") -> Any:
    """Parse JSON text; duplicate keys, NaN and Infinity raise RecordError."""
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_refuse_constant)
    except _DuplicateKey as exc:
        line, column = _duplicate_position(text)
        reason = f"duplicate key {exc.key!r} at line {line} column {column}"
        raise RecordError(where, [("", reason)]) from None
    except json.JSONDecodeError as exc:
        reason = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        raise RecordError(where, [("", reason)]) from None
    except ValueError as exc:
        raise RecordError(where, [("", f"invalid JSON: {exc}")]) from None


_KEY_BEFORE_VALUE = re.compile(r'"(?:[^"\\]|\\.)*"\s*:\s*$')


def _duplicate_position(text: str) -> tuple[int, int]:
    """Line and column of the first repeated key.

    Only reached after a duplicate was found: the fast C scanner cannot say where it was, so
    the text is scanned again with the pure-Python scanner, whose object parser we wrap to
    note where each member's value starts.
    """
    decoder = json.JSONDecoder()
    found: list[int] = []

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, *_: Any) -> tuple[Any, int]:
        starts: list[int] = []

        def scan_member(string: str, index: int) -> Any:
            starts.append(index)
            return scan_once(string, index)

        # JSONObject, parse_object, scan_once and py_make_scanner are CPython's undocumented
        # pure-Python scanner parts: real, but absent from typeshed's json stubs.
        pairs, end = json.decoder.JSONObject(s_and_end, strict, scan_member, None, list, {})  # type: ignore[attr-defined]
        seen: set[str] = set()
        for (key, _), start in zip(pairs, starts):
            if key in seen and not found:
                found.append(start)
            seen.add(key)
        return dict(pairs), end

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    decoder.decode(text)
    offset = found[0] if found else 0
    key = _KEY_BEFORE_VALUE.search(text, 0, offset)
    if key is not None:
        offset = key.start()
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class _DuplicateYamlKey(yaml.constructor.ConstructorError):
    pass


class StrictSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, keeps timestamps as the strings written and reads
    exponent numbers like 1e-3 as floats."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise _DuplicateYamlKey(problem=f"duplicate key {key!r}", problem_mark=key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


StrictSafeLoader.add_constructor(_TIMESTAMP_TAG, lambda loader, node: loader.construct_scalar(node))
# YAML 1.1 reads 1e-3 (no dot) as a string; JSON and YAML 1.2 read it as a number, and so do we.
StrictSafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)


def loads_yaml(text: str, where: str = "") -> Any:
    """Parse one YAML document safely; duplicate keys raise RecordError naming key and line."""
    try:
        return yaml.load(text, Loader=StrictSafeLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        duplicate = isinstance(exc, _DuplicateYamlKey)
        reason = f"{exc.problem}{at}" if duplicate else f"invalid YAML{at}: {exc.problem}"
        raise RecordError(where, [("", reason)]) from None
    except yaml.YAMLError as exc:
        raise RecordError(where, [("", f"invalid YAML: {exc}")]) from None
