"""`kernelindex schemas OUTDIR`: one Draft 2020-12 schema per kind, usable by any validator."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator
from records_testkit import all_fixtures, changed
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.records.json_schema import schema_file_name
from kernelindex.records.models import KINDS, dump_record, parse_record


def test_schemas_command_writes_one_valid_schema_per_kind(tmp_path: Path) -> None:
    outdir = tmp_path / "schemas"
    result = CliRunner().invoke(app, ["schemas", str(outdir)])
    assert result.exit_code == 0, result.output
    written = {path.name for path in outdir.iterdir()}
    assert written == {schema_file_name(model) for model in KINDS.values()}
    assert "benchmark-run.v1alpha1.schema.json" in written
    validators = {}
    for path in outdir.iterdir():
        schema = json.loads(path.read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        validators[schema["title"]] = Draft202012Validator(schema)
    assert set(validators) == set(KINDS)
    for name, data in all_fixtures().items():
        validator = validators[data["kind"]]
        assert validator.is_valid(dump_record(parse_record(data))), name
        assert not validator.is_valid(changed(data, "spec.unknownField", 1)), name
        assert not validator.is_valid(changed(data, "metadata.name", "Not A Slug")), name
