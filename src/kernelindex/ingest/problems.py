"""What went wrong in an import, said as file, line, field and reason."""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex.records.refusal import Refusal, RefusalKind


@dataclass(frozen=True)
class ImportProblem:
    file: str
    line: int | None
    field: str | None
    reason: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.field}: {self.reason}" if self.field else f"{where}: {self.reason}"


class ImportFailed(Refusal):
    """Raised when an import is refused; nothing of it was stored."""

    kind = RefusalKind.INVALID

    def __init__(self, problems: list[ImportProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]


class LineError(Exception):
    """A problem with one line, raised while reading; the reader adds the file name."""

    def __init__(self, line: int | None, reason: str, field: str | None = None) -> None:
        self.line, self.reason, self.field = line, reason, field
        super().__init__(reason)

    def __reduce__(self):  # raised in an import's worker process, it crosses back whole
        return LineError, (self.line, self.reason, self.field)
