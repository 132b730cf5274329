"""The built-in sample the demo imports: the two seed run bundles and our own problem packs.

The real catalog export is not shipped (its terms keep it out of the project); the demo imports it
from `../shared/data` beside the checkout when it is there.
"""

from __future__ import annotations

import os
from pathlib import Path

from kernelindex.formats.packs import problem_folders

HERE = Path(__file__).resolve().parent
PROBLEMS = HERE.parent / "problems"


def sample_paths() -> list[Path]:
    """Seed bundles first, then every problem pack (OperationSpec, WorkloadCases, WorkloadSuite)."""
    bundles = sorted(HERE.glob("*.json"))
    packs = problem_folders(PROBLEMS)
    return [*bundles, *packs]


def default_catalogs() -> list[Path]:
    """Catalog exports in `$KERNELINDEX_SHARED/data`, else `../shared/data` from here or the working folder."""
    roots = [Path(os.environ["KERNELINDEX_SHARED"])] if os.environ.get("KERNELINDEX_SHARED") else []
    roots += [Path.cwd().parent / "shared", HERE.parents[2].parent / "shared"]
    for root in roots:
        found = sorted((root / "data").glob("kernelindex-catalog-*.jsonl.zst"))
        if found:
            return found[-1:]
    return []
