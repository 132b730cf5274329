"""The `Attestation` kind: what someone observed about a stored run, as a record of its own.

An attestation is a record like any other (same envelope, same digest rule), so it can be
signed, exported and cited. It never edits the run it concerns; it points at it by digest.
Free text is bounded and must not carry markup: it is shown on public pages, and refusing it at
the door means no stored record depends on escaping being right everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, StringConstraints, model_validator

from kernelindex import API_VERSION
from kernelindex.records.envelope import Metadata, Record, Strict
from kernelindex.records.fields import Digest, Identifier, Number, Timestamp, text
from kernelindex.records.validation import validate

CLAIMS = ("reproduced", "could_not_reproduce", "environment_note", "regression_observed")

_MARKUP = re.compile(r"<\s*[A-Za-z!/?]|&#?[A-Za-z0-9]+;")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def plain_text_problem(value: str) -> str | None:
    """Why a string is not plain text, or None: shared by the model and the web form."""
    if _MARKUP.search(value):
        return "must be plain text: HTML tags and character entities are refused"
    if _CONTROL.search(value):
        return "must not contain control characters"
    return None


def _plain_text(value: str) -> str:
    problem = plain_text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _web_uri(value: str) -> str:
    if not value.startswith(("https://", "http://")):
        raise ValueError("must be an http(s) URL")
    return _plain_text(value)


def plain_text(max_length: int) -> tuple[StringConstraints, AfterValidator]:
    """The metadata of a bounded plain-text field: `Annotated[str, *plain_text(200)]`."""
    return StringConstraints(min_length=1, max_length=max_length), AfterValidator(_plain_text)


class Attester(Strict):
    """Who says so: a display name, and the signing key's id when the attestation is signed."""

    name: Annotated[str, *plain_text(200)]
    github: Annotated[str, text(39, r"^[A-Za-z0-9-]+$")] | None = None
    keyId: Digest | None = None


class MeasuredValue(Strict):
    value: Number
    unit: Identifier
    metric: Identifier | None = None
    statistic: Identifier | None = None


class EvidenceRef(Strict):
    uri: Annotated[str, StringConstraints(max_length=2000), AfterValidator(_web_uri)]
    digest: Digest


class AttestationSpec(Strict):
    claim: Literal["reproduced", "could_not_reproduce", "environment_note", "regression_observed"]
    runDigest: Digest
    attester: Attester
    observedAt: Timestamp
    note: Annotated[str, *plain_text(4000)] | None = None
    measured: MeasuredValue | None = None
    evidence: EvidenceRef | None = None
    environmentDigest: Digest | None = None
    reproductionRunDigest: Digest | None = None
    """A BenchmarkRun stored in this index that repeated the run (set for harness reproductions)."""


class AttestationMetadata(Metadata):
    """Shared metadata, with every string in it held to plain text (it is shown on pages too)."""

    @model_validator(mode="after")
    def _no_markup(self) -> AttestationMetadata:
        for path, value in _strings(self.model_dump(exclude_none=True), ""):
            problem = plain_text_problem(value)
            if problem:
                raise ValueError(f"{path}: {problem}")
        return self


class Attestation(Record):
    KIND = "Attestation"
    kind: Literal["Attestation"]
    metadata: AttestationMetadata
    spec: AttestationSpec


def new_attestation(spec: Mapping[str, Any], name: str | None = None) -> Attestation:
    """Build and validate an attestation record from its spec (RecordError if refused); the name
    defaults from run and time."""
    slug = name or "attestation-{}-{}".format(
        str(spec.get("runDigest", "")).removeprefix("sha256:")[:12] or "run",
        re.sub(r"[^0-9a-z]", "", str(spec.get("observedAt", "")).lower())[:20] or "undated",
    )
    record = {"apiVersion": API_VERSION, "kind": Attestation.KIND, "metadata": {"name": slug}, "spec": dict(spec)}
    return validate(Attestation, record, where="attestation")


def _strings(value: Any, path: str):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}".lstrip("."))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
