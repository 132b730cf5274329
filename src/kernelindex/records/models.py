"""Parse, dump and digest records of every kind: the entry point other layers import.

``parse_record`` picks the model by ``kind`` from ``KINDS`` (a plain dict, so a kind of our
own is one ``register_kind`` call away) and turns pydantic's errors into one ``RecordError``
naming where the record came from, the field path and the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kernelindex.records.attestation import Attestation
from kernelindex.records.canonical import canonical_json, digest
from kernelindex.records.envelope import Metadata, Record
from kernelindex.records.errors import RecordError
from kernelindex.records.kernel_kinds import KERNEL_KINDS
from kernelindex.records.serving_kinds import SERVING_KINDS
from kernelindex.records.validation import check, dict_checker, validate

KINDS: dict[str, type[Record]] = {model.KIND: model for model in (*KERNEL_KINDS, *SERVING_KINDS)}
"""kind name -> model class."""
KINDS[Attestation.KIND] = Attestation  # our own kind (see records/attestation.py)


def register_kind(model: type[Record]) -> type[Record]:
    """Add a kind (usable as a class decorator); refuses to replace a different model."""
    existing = KINDS.get(model.KIND)
    if existing is not None and existing is not model:
        raise ValueError(f"kind {model.KIND!r} is already registered to {existing.__name__}")
    KINDS[model.KIND] = model
    return model


def build_validators(models: Iterable[type[Record]] = KERNEL_KINDS) -> None:
    """Build the validators of ``models`` now rather than on first use (``defer_build``): before
    forking processes that validate, so that they inherit them instead of each building its own."""
    for model in models:
        model.model_rebuild()
        dict_checker(model)


def parse_record(data: Any, *, where: str = "") -> Record:
    """Validate one record (a JSON-ready dict) and return the model of its kind."""
    return validate(_model_of(data, where), data, where)


def check_kind(data: Any, *, where: str = "") -> None:
    """:func:`parse_record` without building the model: for callers that only need the verdict."""
    check(_model_of(data, where), data, where)


def _model_of(data: Any, where: str) -> type[Record]:
    if not isinstance(data, Mapping):
        raise RecordError(where, [("", f"expected a record object, got {type(data).__name__}")])
    kind = data.get("kind")
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        known = ", ".join(sorted(KINDS))
        raise RecordError(where, [("kind", f"unknown kind {kind!r} (known kinds: {known})")])
    return model


def dump_record(record: Record) -> dict[str, Any]:
    """The record as JSON-ready data; fields never given are left out, so a parsed record
    dumps back to the same canonical bytes."""
    return record.model_dump(mode="json", exclude_none=True)


def record_digest(record: Record) -> str:
    """``sha256:`` digest of ``{apiVersion, kind, spec}`` (metadata left out)."""
    return digest(dump_record(record))


def record_canonical_json(record: Record) -> bytes:
    """RFC 8785 bytes of the whole record, metadata included."""
    return canonical_json(dump_record(record))


__all__ = [
    "KINDS",
    "Metadata",
    "check_kind",
    "Record",
    "RecordError",
    "dump_record",
    "parse_record",
    "record_canonical_json",
    "record_digest",
    "register_kind",
]
