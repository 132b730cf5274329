"""Staging a workload's safetensors inputs for the reference's sandbox.

The parent finds every file before any process starts (`kernelindex.formats.blobs`: a missing one is
refused then, naming the workload and the path) and copies those outside the problem folder into the
problem's snapshot, since the reference's sandbox sees nothing else; the reference reads each through
the map `stage` returns.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

STAGED = ".kernelindex-blobs"  # the snapshot's folder of copied blobs


def stage(found: Mapping[str, Path], problem_root: Path, snapshot: Path) -> dict[str, str]:
    """Each path → its file relative to the snapshot: where it already is when inside the problem folder
    (the snapshot is its copy), else a copy made under STAGED."""
    files: dict[str, str] = {}
    for number, (path, file) in enumerate(sorted(found.items())):
        real = file.resolve()
        if real.is_relative_to(Path(problem_root).resolve()):
            files[path] = str(real.relative_to(Path(problem_root).resolve()))
            continue
        target = snapshot / STAGED / f"{number}-{real.name}"
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(real, target)
        files[path] = str(target.relative_to(snapshot))
    return files
