"""Helpers of the harness tests: the fixture folders, quick options, solution builders."""

from __future__ import annotations

import json
from pathlib import Path

from kernelindex.formats.problem import load_problem
from kernelindex.formats.solution import load_solution
from kernelindex.harness.runner import EvalOptions

FIXTURES = Path(__file__).parent / "fixtures"
PROBLEMS = FIXTURES / "problems"
SOLUTIONS = FIXTURES / "solutions"
# Small counts keep the suite fast; every part of a full run (rounds, warm-up, timed calls,
# paired timed batches, checks of timed calls picked after each batch) still happens.
QUICK = dict(rounds=3, warmup=2, iterations=8, pairs=4, timeout_s=120)


def quick(**overrides) -> EvalOptions:
    return EvalOptions(**{**QUICK, **overrides})


def problem(name: str):
    return load_problem(PROBLEMS / name)


def solution(name: str):
    return load_solution(SOLUTIONS / name / "solution.json")


def write_solution(
    folder: Path,
    code: str,
    *,
    definition: str = "vector_add_f32",
    dps: bool = True,
    languages=("pytorch",),
    extra: dict[str, str] | None = None,
    name: str | None = None,
):
    """A solution.json with inline sources (entry file `solution.py`, function `run`)."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = [{"path": "solution.py", "content": code}] + [{"path": p, "content": c} for p, c in (extra or {}).items()]
    doc = {
        "name": name or folder.name,
        "definition": definition,
        "author": "kernelindex tests",
        "spec": {
            "languages": list(languages),
            "target_hardware": ["cpu"],
            "entry_point": "solution.py::run",
            "destination_passing_style": dps,
        },
        "sources": sources,
    }
    path = folder / "solution.json"
    path.write_text(json.dumps(doc, indent=1))
    return load_solution(path)
