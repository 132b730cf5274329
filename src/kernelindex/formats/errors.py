"""The one error of the upstream readers: which file, line and field, and why."""

from __future__ import annotations

from pathlib import Path


class FormatError(ValueError):
    """A problem or solution file that does not follow the format; says file, line, field, why."""

    def __init__(self, file: str | Path, line: int | None, field: str | None, reason: str):
        self.file, self.line, self.field, self.reason = str(file), line, field, reason
        where = f"{file}:{line}" if line else str(file)
        what = f" field {field!r}" if field else ""
        super().__init__(f"{where}:{what} {reason}")
