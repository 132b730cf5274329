"""JSON Schema (Draft 2020-12) of each kind, generated from the models.

Optional fields are ``X | None`` in Python only so that "absent" has a value; null itself is
refused, so the schema shows the field as ``X`` with no default, like the published schemas.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from kernelindex.records.envelope import Record

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


class _RecordSchemaGenerator(GenerateJsonSchema):
    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        # pydantic writes patternProperties, which lets keys that miss the pattern through;
        # propertyNames + additionalProperties says what the published schemas say.
        json_schema: JsonSchemaValue = {"type": "object"}
        keys = self.generate_inner(schema["keys_schema"]) if "keys_schema" in schema else {}
        if set(keys) - {"type"}:
            json_schema["propertyNames"] = keys
        if "values_schema" in schema:
            json_schema["additionalProperties"] = self.generate_inner(schema["values_schema"])
        return json_schema

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])


def kind_schema(model: type[Record]) -> dict[str, Any]:
    """The JSON Schema of one kind, titled with the kind's name."""
    schema = model.model_json_schema(schema_generator=_RecordSchemaGenerator)
    return {"$schema": DRAFT_2020_12, **schema, "title": model.KIND}


def schema_file_name(model: type[Record]) -> str:
    """``BenchmarkRun`` -> ``benchmark-run.v1alpha1.schema.json``, the published file names."""
    kebab = re.sub(r"(?<!^)(?=[A-Z])", "-", model.KIND).lower()
    version = model.API_VERSION.rsplit("/", 1)[-1]
    return f"{kebab}.{version}.schema.json"
