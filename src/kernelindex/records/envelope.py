"""The parts every record shares: a strict base model, metadata and the envelope.

Strict means: unknown fields are an error (not dropped), nothing is coerced (``"5"`` is not an
integer), and ``null`` is refused: no published field is nullable, so an absent field is left
out rather than written as null. Models are frozen because records are never edited in place.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, field_validator

from kernelindex import API_VERSION
from kernelindex.records.fields import IDENTIFIER_PATTERN, Name, Text100, Text200, Text2000


class Strict(BaseModel):
    # defer_build: each model's validator is built on its first use, so a process never pays for
    # kinds it does not meet (an import of a catalog without serving rows, attestations)
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _refuse_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("null is not allowed: leave the field out instead")
        return value


LabelKey = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]


class Author(Strict):
    name: Text200 | None = None
    github: Text100 | None = None


class SourceRef(Strict):
    url: Text2000


class Metadata(Strict):
    """Presentation only: never part of a digest, so a retitle keeps the record's identity."""

    name: Name
    title: Text200 | None = None
    description: Text2000 | None = None
    labels: dict[LabelKey, Text200] | None = None
    authors: list[Author] | None = None
    sourceRefs: list[SourceRef] | None = None


class Record(Strict):
    """Base of every kind: ``{apiVersion, kind, metadata, spec}``.

    Subclasses set ``KIND`` and narrow ``kind`` and ``spec``; ``API_VERSION`` is a class
    attribute so a kind of our own can live under another apiVersion.
    """

    KIND: ClassVar[str]
    API_VERSION: ClassVar[str] = API_VERSION

    apiVersion: Literal["kernelindex.dev/v1alpha1"]
    kind: str
    metadata: Metadata
    spec: Any
