"""What a child process may say, as the parent reads it: one schema per reply, and child text as data.

A solution shares its child's control pipe, so every reply is validated here before the parent
uses a field of it; a reply that does not fit fails the case (as a suspected reward hack), never
the parent. Text from a child (notes, a traceback, its stdout) is the solution's output, not the
harness's: `untrusted` escapes every control character and caps its length, and the parent keeps
it apart from its own log (`SolutionOutput`), labelled as what the solution's process said.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

NOTE_CHARS = 240  # one note, after escaping
NOTES_PER_BATCH = 16
NOTES_PER_CASE = 64
LOG_CHARS = 16_000  # a failure's traceback as the child tells it
OUTPUT_CHARS = 32_000  # all the solution's output one case keeps


_ESCAPED = {0x7F, 0x2028, 0x2029, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def untrusted(text: str, limit: int, lines: bool = True) -> str:
    """`text` with every control, bidirectional-override and line-separator character escaped (newline
    and tab kept only when `lines`) and at most `limit` characters, so it cannot draw over a terminal,
    disguise itself, forge a line of ours in a log, or grow a record."""
    out: list[str] = []
    size = 0
    for char in text:
        code = ord(char)
        keep = (char in "\n\t" and lines) or (code >= 0x20 and code not in _ESCAPED and not 0xD800 <= code < 0xE000)
        piece = char if keep else f"\\u{code:04x}"
        size += len(piece)
        if size > limit:
            out.append(" …[cut]")
            break
        out.append(piece)
    return "".join(out)


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    seq: int
    ok: bool


class Failure(_Reply):
    ok: Literal[False]
    kind: Literal["compile", "shape", "dtype", "runtime"]
    log: str = Field(max_length=4 * LOG_CHARS)


class Done(_Reply):
    """A request that completed (open, load, inputs)."""

    ok: Literal[True]


class InputsDone(_Reply):
    """Inputs made (by the reference's process): the Python scalars a custom inputs function made,
    by slot number, for the parent to hand both sides with each batch."""

    ok: Literal[True]
    scalars: dict[str, dict[str, bool | int | float]] = Field(default_factory=dict)

    @field_validator("scalars")
    @classmethod
    def _finite(cls, scalars: dict[str, dict[str, bool | int | float]]) -> dict[str, dict[str, bool | int | float]]:
        for slot, values in scalars.items():
            if not slot.isdigit() or any(isinstance(v, float) and not math.isfinite(v) for v in values.values()):
                raise ValueError(f"slot {slot!r}: a slot number and finite values are needed")
        return scalars


class BatchDone(_Reply):
    ok: Literal[True]
    samples: list[int] = Field(max_length=1 << 16)  # the child's own per-call figures: a cross-check only
    notes: list[str] = Field(default_factory=list)  # typed; cut to NOTES_PER_BATCH (the pipe bounds the whole reply)

    @field_validator("notes")
    @classmethod
    def _short(cls, notes: list[str]) -> list[str]:
        return [untrusted(n, NOTE_CHARS, lines=False) for n in notes[:NOTES_PER_BATCH]]


class MalformedReply(Exception):
    """A reply that fits no schema: the case fails, the parent goes on."""


BATCH_OPS = ("batch", "calibrate")  # the requests whose replies carry per-call figures and notes


def parse(raw: dict, op: str) -> Failure | Done | InputsDone | BatchDone:
    """The reply to a request `op`, as its schema reads it."""
    try:
        if raw.get("ok") is False:
            return Failure.model_validate(raw)
        kind = BatchDone if op in BATCH_OPS else InputsDone if op == "inputs" else Done
        return kind.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise MalformedReply(f"{where}: {first['msg']}") from None


class SolutionOutput:
    """Everything one case's solution process said, kept apart from the harness's log and capped."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.failure_log = ""
        self.stdout = ""

    def add_notes(self, notes: list[str]) -> None:
        for note in notes:
            if note not in self.notes and len(self.notes) < NOTES_PER_CASE:
                self.notes.append(note)

    def text(self) -> str:
        """The labelled sections, empty when the process said nothing."""
        parts = []
        if self.failure_log:
            parts.append("--- the failure as the solution's process reported it ---\n" + self.failure_log)
        if self.stdout.strip():
            parts.append("--- the solution's process output (stdout and stderr, tail) ---\n" + self.stdout)
        if self.notes:
            parts.append(
                "--- what the solution's process noticed about itself (not a verdict) ---\n" + "\n".join(self.notes)
            )
        return untrusted("\n".join(parts), OUTPUT_CHARS) if parts else ""
