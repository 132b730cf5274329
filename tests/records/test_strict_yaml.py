"""The tests' strict YAML reader (strict_yaml.py): duplicate keys refused with key and line,
timestamps kept as the strings written, a YAML record hashing as its JSON does."""

from __future__ import annotations

import json

import pytest
import yaml
from records_testkit import fixture
from strict_yaml import loads_yaml

from kernelindex.records.models import RecordError, dump_record, parse_record, record_digest
from kernelindex.records.strict_json import loads_strict


def test_yaml_duplicate_key_names_key_and_line() -> None:
    text = "kind: SoftwareProject\nmetadata:\n  name: p\nspec:\n  name: A\n  name: B\n"
    with pytest.raises(RecordError) as caught:
        loads_yaml(text, "project.yaml")
    assert str(caught.value) == "project.yaml: duplicate key 'name' at line 6 column 3"


def test_yaml_merge_keys_are_not_duplicates() -> None:
    text = "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  x: 3\n"
    assert loads_yaml(text)["derived"] == {"x": 3, "y": 2}


def test_yaml_timestamps_stay_the_strings_written() -> None:
    data = loads_yaml("a: 2026-08-01T12:00:00Z\nb: 2026-08-01\nc: !!timestamp 2026-08-01 12:00:00\n")
    assert data == {"a": "2026-08-01T12:00:00Z", "b": "2026-08-01", "c": "2026-08-01 12:00:00"}


def test_yaml_exponent_numbers_are_numbers_as_in_json() -> None:
    data = loads_yaml("a: 1e-3\nb: 2E+5\nc: 1.5e3\nd: '1e-3'\ne: 1e\n")
    assert data == {"a": 0.001, "b": 200000.0, "c": 1500.0, "d": "1e-3", "e": "1e"}
    assert not isinstance(yaml.safe_load("a: 2E+5")["a"], float)  # what plain PyYAML does


def test_yaml_refuses_python_objects() -> None:
    with pytest.raises(RecordError, match="invalid YAML"):
        loads_yaml("a: !!python/object/apply:os.system ['true']\n")


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(RecordError, match=r"^bad.yaml: invalid YAML at line 2 column 4"):
        loads_yaml("a: 1\nb: : 2\nc: 3\n", "bad.yaml")


def test_yaml_record_parses_to_the_same_digest_as_json() -> None:
    data = fixture("toy-scale-run-1")
    from_json = parse_record(loads_strict(json.dumps(data)))
    text = yaml.safe_dump(data, sort_keys=False)
    from_yaml = parse_record(loads_yaml(text, "run.yaml"), where="run.yaml")
    assert dump_record(from_yaml) == dump_record(from_json)
    assert record_digest(from_yaml) == record_digest(from_json)
