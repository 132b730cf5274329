"""Where a workload's safetensors inputs are: under the upstream blob root, or in the problem folder.

FlashInfer-Bench resolves a safetensors input's path against its trace set's root (its dataset
keeps the tensors under ``blob/workloads/``); SOL-ExecBench against its blob roots, dropping
leading parts of the path that the root already ends with. The blob root is ``--blob-root`` or,
without it, KERNELINDEX_BLOB_ROOT (`blob_root`, the one place that reads either). One resolver for
both users of a blob: the harness, which stages the file for the reference, and a workload's record,
which names the file by its content digest (two cases that differ only in their blobs are two
workloads). A missing file is refused naming the workload and the path.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from kernelindex.formats.workload import WorkloadCase
from kernelindex.records.canonical import DIGEST_PREFIX

ENV = "KERNELINDEX_BLOB_ROOT"


class BlobMissing(RuntimeError):
    """A safetensors input whose file is nowhere it may be."""


def blob_root(given: str | Path | None) -> Path | None:
    """The blob root: the option when given, else the environment's, else none."""
    value = given if given not in (None, "") else os.environ.get(ENV) or None
    return Path(value).expanduser() if value is not None else None


def _inside(path: Path, roots: list[Path]) -> bool:
    real = path.resolve()
    return any(real.is_relative_to(root.resolve()) for root in roots)


def locate(path: str, problem_root: Path, root: Path | None, workload: str, name: str) -> Path:
    """The file of one safetensors input: under the blob root first (the whole path, then with its leading
    parts dropped one by one, as SOL-ExecBench resolves it), then in the problem folder. A path that leads
    out of both (``..``, a link, an absolute path elsewhere) is refused like a missing one."""
    given, problem_root = Path(path), Path(problem_root)
    roots = [r for r in (root, problem_root) if r is not None]
    if given.is_absolute():
        candidates = [given]
    else:
        tails = [Path(*given.parts[i:]) for i in range(len(given.parts))]
        candidates = [root / tail for tail in tails] if root is not None else []
        candidates.append(problem_root / given)
    for candidate in candidates:
        if candidate.is_file() and _inside(candidate, roots):
            return candidate
    looked = " or ".join(str(r) for r in roots)
    hint = "" if root is not None else f"; give the upstream blob root with --blob-root or {ENV}"
    raise BlobMissing(f"workload {workload}: safetensors input {name!r}: no file {path!r} under {looked}{hint}")


def _named(case: WorkloadCase) -> Iterator[tuple[str, str]]:
    for name, spec in case.inputs.items():
        if spec.type == "safetensors" and spec.path is not None:
            yield name, spec.path


def paths_of(case: WorkloadCase) -> set[str]:
    """The safetensors paths one case names."""
    return {path for _, path in _named(case)}


def locate_all(cases: Iterable[WorkloadCase], problem_root: Path, root: Path | None) -> dict[str, Path]:
    """Every safetensors path the cases name → its file (BlobMissing for the first that has none)."""
    found: dict[str, Path] = {}
    for case in cases:
        for name, path in _named(case):
            if path not in found:
                found[path] = locate(path, problem_root, root, case.uuid, name)
    return found


def content_digests(found: Mapping[str, Path]) -> dict[str, str]:
    """Each path's ``sha256:`` digest of its file's bytes, read in pieces (a blob may be gigabytes)."""
    digests: dict[str, str] = {}
    for path, file in found.items():
        with open(file, "rb") as handle:
            digests[path] = DIGEST_PREFIX + hashlib.file_digest(handle, "sha256").hexdigest()
    return digests
