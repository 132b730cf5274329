"""Our models against KernelIndex's published schemas and examples (from ../shared).

Three checks that the models accept exactly what the published schemas accept: the schemas we
generate match the published ones keyword for keyword, our dumps validate against the published
schemas, and randomly damaged records get the same verdict from both.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from records_schema_tree import differences, normalize, property_paths
from records_testkit import all_fixtures
from strict_yaml import loads_yaml

from kernelindex.records.canonical import canonical_json, digest
from kernelindex.records.json_schema import kind_schema, schema_file_name
from kernelindex.records.models import KINDS, RecordError, dump_record, parse_record, record_digest

SEED = random.randrange(2**32)

# Where we are knowingly stricter than the published schema (see kernel_kinds.DurationPair).
INTENDED_DIFFERENCES = {
    "BenchmarkRun": {
        "/properties/spec/properties/timing/properties/latencyNs/properties/confidence95/maxItems: only ours has 2",
        "/properties/spec/properties/timing/properties/latencyNs/properties/confidence95/minItems: only ours has 2",
    }
}


def published(registry_dir: Path) -> dict[str, dict[str, Any]]:
    schemas = {}
    for path in sorted((registry_dir / "schemas").glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        schemas[schema["title"]] = schema
    return schemas


def examples(registry_dir: Path, folder: str = "examples") -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted((registry_dir / folder).glob("*.yaml"))}


def test_every_published_kind_has_a_model_and_file_name(registry_dir: Path) -> None:
    schemas = published(registry_dir)
    assert len(schemas) == 13
    for kind in schemas:
        assert kind in KINDS
        assert (registry_dir / "schemas" / schema_file_name(KINDS[kind])).is_file()


def test_property_paths_equal_the_published_ones(registry_dir: Path) -> None:
    for kind, schema in published(registry_dir).items():
        theirs = property_paths(normalize(schema))
        ours = property_paths(normalize(kind_schema(KINDS[kind])))
        assert ours == theirs, f"{kind}: only published {sorted(theirs - ours)}, only ours {sorted(ours - theirs)}"
        assert len(theirs) > 20


def test_generated_schemas_match_the_published_keyword_for_keyword(registry_dir: Path) -> None:
    for kind, schema in published(registry_dir).items():
        found = set(differences(normalize(schema), normalize(kind_schema(KINDS[kind]))))
        assert found == INTENDED_DIFFERENCES.get(kind, set()), kind


def test_valid_examples_parse_and_round_trip_exactly(registry_dir: Path) -> None:
    validators = {kind: Draft202012Validator(s) for kind, s in published(registry_dir).items()}
    texts = examples(registry_dir)
    assert len(texts) == 13
    for name, text in texts.items():
        data = loads_yaml(text, name)
        record = parse_record(data, where=name)
        dumped = dump_record(record)
        assert canonical_json(dumped) == canonical_json(data), name
        assert record_digest(record) == digest(data), name
        validators[record.kind].validate(dumped)


def test_examples_refer_to_each_other_by_digest(registry_dir: Path) -> None:
    records = {name: parse_record(loads_yaml(text, name)) for name, text in examples(registry_dir).items()}
    operation = record_digest(records["operation-spec.yaml"])
    assert records["workload-case.yaml"].spec.operationSpecDigest == operation
    assert records["implementation-revision.yaml"].spec.operation.specDigest == operation


@pytest.mark.parametrize(
    ("name", "path", "words"),
    [
        ("unknown-field.yaml", "spec.popularity", "unknown field"),
        ("ambiguous-duration.yaml", "spec.timing.latencyNs.median", "ambiguous duration"),
        ("bad-digest.yaml", "spec.operationSpecDigest", "bad digest 'md5:abc123'"),
        ("duplicate-key.yaml", "", "duplicate key 'name' at line 8"),
    ],
)
def test_invalid_examples_are_refused_with_the_reason(registry_dir: Path, name: str, path: str, words: str) -> None:
    text = examples(registry_dir, "examples/invalid")[name]
    with pytest.raises(RecordError) as caught:
        parse_record(loads_yaml(text, name), where=name)
    assert caught.value.where == name
    assert caught.value.path == path
    assert words in str(caught.value)


def test_our_fixtures_validate_against_the_published_schemas(registry_dir: Path) -> None:
    validators = {kind: Draft202012Validator(s) for kind, s in published(registry_dir).items()}
    for name, data in all_fixtures().items():
        validators[data["kind"]].validate(dump_record(parse_record(data, where=name)))


# --- differential test: damage records at random, compare verdicts ---------------------------

ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    3.0,
    2.5,
    2**53 - 1,
    2**53,
    -(2**53),
    1e300,
    "",
    "x",
    "Bad Value",
    "a" * 600,
    "sha256:" + "0" * 64,
    "0" * 40,
    "2026-08-01T12:00:00Z",
    "2026-02-29T12:00Z",
    "12 us",
    "7 \u00b5s",
    "1.5 ns",
    "10000000 s",
    [],
    [1],
    ["x"],
    {},
    {"x": 1},
]


def _locations(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(value, dict):
        for key, sub in value.items():
            found += _locations(sub, (*path, key))
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            found += _locations(sub, (*path, index))
    return found


def _damage(record: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    result = copy.deepcopy(record)
    path = rng.choice(_locations(result))
    parent: Any = result
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    action = rng.choice(["replace", "replace", "delete", "add"])
    if action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[rng.choice(["extra", "value", "name", "Bad-Key", "kind"])] = rng.choice(ODD_VALUES)
    else:
        parent[last] = rng.choice(ODD_VALUES)
    return result


def _known_stricter(error: RecordError) -> bool:
    """Refusals the published schema cannot express: exact ns, the confidence pair, and
    numbers beyond 2**53-1 (which RFC 8785 cannot hash)."""
    return all(
        "ambiguous duration" in reason or "beyond 2**53-1" in reason or path.endswith("confidence95")
        for path, reason in error.problems
    )


def test_damaged_records_get_the_same_verdict_as_the_published_schemas(registry_dir: Path) -> None:
    print(f"seed={SEED}")
    rng = random.Random(SEED)
    validators = {kind: Draft202012Validator(s) for kind, s in published(registry_dir).items()}
    originals = [loads_yaml(text) for text in examples(registry_dir).values()]
    originals += [data for data in all_fixtures().values() if data["kind"] in validators]
    disagreements = []
    checked = refused = 0
    for _ in range(3000):
        damaged = _damage(rng.choice(originals), rng)
        kind = damaged.get("kind") if isinstance(damaged, dict) else None
        if not isinstance(kind, str) or kind not in validators:
            continue  # an envelope we refuse before any schema applies (covered elsewhere)
        schema_ok = validators[kind].is_valid(damaged)
        try:
            parse_record(damaged)
            model_ok, error = True, None
        except RecordError as exc:
            model_ok, error = False, exc
        checked += 1
        refused += not model_ok
        if schema_ok == model_ok or (schema_ok and error is not None and _known_stricter(error)):
            continue
        disagreements.append((json.dumps(damaged)[:300], schema_ok, str(error)[:200]))
    assert checked > 2000 and refused > checked // 3
    assert not disagreements, f"seed={SEED}: {disagreements[:5]}"
