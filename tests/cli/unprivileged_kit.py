"""Running the CLI as a user that file permissions hold, for tests of read-only files and folders.

Root passes every permission check (its CAP_DAC_OVERRIDE), so a file made read-only stops no one
when the tests run as root, as they do in CI containers. There the command runs as root still, but
with the capabilities that override permissions dropped (util-linux ``setpriv``): its own files'
modes then bind it as they bind any user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

DROP = ["--bounding-set=-dac_override,-dac_read_search"]


def unprivileged_prefix() -> list[str]:
    """What to put before a command so that permissions bind it; skips the test where nothing can."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, which no file mode stops, and setpriv (to drop that power) is absent")
    if subprocess.run([setpriv, *DROP, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root, which no file mode stops, and setpriv cannot drop that power here")
    return [setpriv, *DROP]


def cli(*args: str) -> subprocess.CompletedProcess:
    """``kernelindex ARGS`` in a process that file permissions hold."""
    command = [*unprivileged_prefix(), sys.executable, "-m", "kernelindex.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """``paths`` (files and folders) with no write permission for anyone, restored afterwards."""
    modes = {path: path.stat().st_mode for path in paths}
    try:
        for path in paths:
            path.chmod(modes[path] & ~0o222)
        yield
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
