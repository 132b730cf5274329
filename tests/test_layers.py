"""The layer order of pyproject.toml's import-linter contracts holds: every import points downward
(records -> store -> ingest | ranking | harness -> services -> web -> cli), only the store speaks
SQL, and records do no I/O."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_imports_follow_the_layers():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command as c; sys.argv = ['lint-imports']; c()",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
