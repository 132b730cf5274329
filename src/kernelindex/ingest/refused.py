"""The refused-lines report of ``import --skip-invalid``: one JSON line per line left out, with why.

Each report line is ``{"file", "line", "field", "reason", "text"}``; ``text`` is the refused line as
it was read, so it can be fixed and imported again. A report file is written only when something
was refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from kernelindex.ingest.problems import ImportProblem


class RefusedLines:
    """Writes refused lines to ``path`` (one report for all inputs) or to ``./NAME.refused.jsonl``
    per input file when no path is given."""

    def __init__(self, path: Path | None, inputs: Iterable[Path]) -> None:
        self.path = path
        self.inputs = [str(p) for p in inputs]
        self._open: dict[Path, IO[str]] = {}

    def path_for(self, input_name: str) -> Path:
        return self.path if self.path is not None else Path.cwd() / f"{Path(input_name).name}.refused.jsonl"

    def unwritable(self) -> str | None:
        """Why a report could not be written where it would go (a folder, or one of the files being
        imported, which writing it would empty), or None: asked before anything is read."""
        for name in self.inputs:
            target = self.path_for(name)
            if target.is_dir():
                return f"the refused-lines report {target} is a folder"
            for source in map(Path, self.inputs):
                if target.exists() and source.exists() and os.path.samefile(target, source):
                    return f"the refused-lines report {target} is {source}, a file being imported: it would be emptied"
        return None

    def write(self, problem: ImportProblem, text: str | None) -> None:
        target = self.path_for(problem.file)
        out = self._open.get(target)
        if out is None:
            out = self._open[target] = open(target, "w", encoding="utf-8")
        entry = {
            "file": problem.file,
            "line": problem.line,
            "field": problem.field,
            "reason": problem.reason,
            "text": text,
        }
        out.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def __enter__(self) -> RefusedLines:
        return self

    def __exit__(self, *exc: object) -> None:
        for out in self._open.values():
            out.close()
