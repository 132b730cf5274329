"""Manifest checks for readers that write records (the MCP ``validate_manifest`` and
``get_manifest_schema`` tools): the verdict the importers reach on one record, and each kind's JSON Schema."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kernelindex.records.canonical import digest
from kernelindex.records.errors import RecordError
from kernelindex.records.json_schema import kind_schema, schema_file_name
from kernelindex.records.models import KINDS, parse_record
from kernelindex.records.refusal import RefusalKind, ViewRefusal
from kernelindex.views.common import Document, ViewModel


class ManifestProblem(ViewModel):
    field: str = Field(description="the field path, e.g. spec.inputs[0].tensor.dtype; empty for the whole record")
    reason: str


class ManifestCheck(ViewModel):
    valid: bool
    kind: str | None
    digest: str | None = Field(description="the record's sha256 digest (of its RFC 8785 canonical JSON) when valid")
    problems: list[ManifestProblem]


class ManifestSchema(ViewModel):
    kind: str
    fileName: str
    schema_: Document = Field(alias="schema", description="JSON Schema (Draft 2020-12) of the kind")


class ManifestKinds(ViewModel):
    kinds: list[str]


def check_manifest(document: Any) -> ManifestCheck:
    """Whether ``document`` is a valid record of its kind, and every problem found if not."""
    kind = document.get("kind") if isinstance(document, dict) else None
    try:
        parse_record(document, where="manifest")
    except RecordError as exc:
        problems = [ManifestProblem(field=path, reason=reason) for path, reason in exc.problems]
        return ManifestCheck(valid=False, kind=kind if isinstance(kind, str) else None, digest=None, problems=problems)
    return ManifestCheck(valid=True, kind=kind, digest=digest(document), problems=[])


def manifest_kinds() -> ManifestKinds:
    return ManifestKinds(kinds=sorted(KINDS))


def manifest_schema(kind: str) -> ManifestSchema:
    model = KINDS.get(kind)
    if model is None:
        raise ViewRefusal(
            RefusalKind.NOT_FOUND, "unknown-kind", f"no record kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}"
        )
    return ManifestSchema(kind=kind, fileName=schema_file_name(model), schema_=kind_schema(model))
