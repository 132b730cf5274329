"""Which files the parent watches for tampering, and whom a change is blamed on.

A solution earns SUSPECTED_REWARD_HACK for rewriting what judges it: the problem and the harness
code its successors import. Under the sandbox those are mounted read-only, so a change can only
come from outside (an editor, a checkout): the run stops as `EnvironmentChanged`, blaming no one.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from harness_testkit import quick, write_solution

from kernelindex.formats.problem import load_problem
from kernelindex.harness import sandbox
from kernelindex.harness.runner import HARNESS_FILES, PACKAGE_DIR, EnvironmentChanged, evaluate, evaluate_many

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"
HONEST = """
import torch

def run(x, y, z):
    torch.add(x, y, out=z)
"""


def _under_watch(path: str) -> bool:
    return any(path == str(root) or path.startswith(f"{root}/") for root in HARNESS_FILES)


def test_every_module_the_harness_processes_import_is_watched():
    """The child, the zygote and the fork server, imported afresh as a sandboxed process would: each
    kernelindex file they load lies under the watched set, so rewriting any of it is seen."""
    code = (
        f"import json, sys; sys.path.insert(0, {str(PACKAGE_DIR.parent)!r}); "
        "import kernelindex.harness.child, kernelindex.harness.zygote, kernelindex.harness.forkserver; "
        "print(json.dumps(sorted(m.__file__ for m in list(sys.modules.values()) "
        "if m.__name__.startswith('kernelindex') and getattr(m, '__file__', None))))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, check=True).stdout)
    assert f"{PACKAGE_DIR}/harness/child.py" in loaded
    assert [f for f in loaded if not _under_watch(f)] == []


def test_edits_elsewhere_in_the_package_are_not_watched():
    """The site, the store and the CLI are never imported by a sandboxed process: a developer editing
    them while a run goes on must not turn an honest solution's case into a reward hack."""
    for part in ("web", "store", "cli", "services", "views"):
        files = [str(p) for p in (PACKAGE_DIR / part).rglob("*.py")]
        assert files and not any(_under_watch(f) for f in files), part


@pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}")
def test_a_change_from_outside_the_sandbox_stops_the_run_and_blames_no_one(tmp_path, problem_copy):
    """The problem folder is changed while the first case runs (by this test, from outside the
    sandbox): the run stops with the file named, rather than recording the honest solution as a hack."""
    marker = problem_copy / f"edited-{random.SystemRandom().randrange(1 << 30)}.txt"

    def edit(event):
        if not marker.exists():
            marker.write_text("an editor saved a file")

    solution = write_solution(tmp_path / "honest", HONEST)
    with pytest.raises(EnvironmentChanged, match=marker.name):
        evaluate(load_problem(problem_copy), solution, quick(cases=[FIRST]), progress=edit)


def test_without_a_sandbox_one_solutions_tampering_is_blamed_on_it_alone(tmp_path, problem_copy):
    """Several solutions in one unsandboxed call: the first adds a file to the problem folder, which
    the parent sees and blames on it; the honest one after it is judged against a baseline of its own,
    not blamed for what the first did."""
    planted = problem_copy / f"planted-{random.SystemRandom().randrange(1 << 30)}.txt"
    vandal = write_solution(
        tmp_path / "vandal",
        f"""
import torch

def run(x, y, z):
    open({str(planted)!r}, "w").write("x")
    torch.add(x, y, out=z)
""",
    )
    honest = write_solution(tmp_path / "honest", HONEST)
    suites = evaluate_many(load_problem(problem_copy), [vandal, honest], quick(cases=[FIRST], sandbox="off"))
    assert [c.status for c in suites[0].cases] == ["REWARD_HACK"] and planted.name in suites[0].cases[0].log
    assert [c.status for c in suites[1].cases] == ["PASSED"], suites[1].cases[0].log
