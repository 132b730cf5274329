"""Reading YAML records strictly, for the tests that read the public registry's examples (the
index itself reads JSON only, through ``records.strict_json``).

PyYAML silently keeps the last of two equal keys, so a record could say one thing to a reader and
hash as another; here a duplicate key is an error naming the key and its line. YAML timestamps stay
the strings written: a record's timestamp is hashed as written.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from kernelindex.records.errors import RecordError

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
