"""The one error a bad record raises, so callers can report file, line, field and reason."""

from __future__ import annotations

from kernelindex.records.refusal import Refusal, RefusalKind


class RecordError(Refusal, ValueError):
    """A record (or the text holding it) was refused.

    ``where`` says which input (e.g. ``"runs.jsonl line 12"``); ``problems`` lists
    ``(field path, reason)`` pairs, the field path written like ``spec.inputs[0].tensor.dtype``
    (empty when the problem is with the whole text, such as invalid JSON).
    """

    kind = RefusalKind.INVALID

    @property
    def code(self) -> str:
        return "invalid_record"

    def __init__(self, where: str, problems: list[tuple[str, str]]) -> None:
        self.where = where
        self.problems = list(problems)
        super().__init__(self._message())

    @property
    def path(self) -> str:
        return self.problems[0][0] if self.problems else ""

    @property
    def reason(self) -> str:
        return self.problems[0][1] if self.problems else ""

    def _message(self) -> str:
        parts = [f"{path}: {reason}" if path else reason for path, reason in self.problems]
        body = "; ".join(parts) or "invalid record"
        return f"{self.where}: {body}" if self.where else body
