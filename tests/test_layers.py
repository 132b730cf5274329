"""The layer order of pyproject.toml's import-linter contracts holds: every import points downward
(records -> store | client -> ingest | ranking | harness -> services | search -> web -> cli), only
the store speaks SQL, records do no I/O, and the front ends write only through services."""

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
