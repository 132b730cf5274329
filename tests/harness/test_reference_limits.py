"""A reference past its time limit is a TIMEOUT of the evaluation, not an invalid reference;
the parent says which side ran out and the estimate shows up in the progress events."""

from __future__ import annotations

import json

from harness_testkit import quick, solution

from kernelindex.formats.problem import load_problem
from kernelindex.harness.runner import evaluate

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"


def test_a_slow_reference_is_a_timeout_of_the_evaluation(problem_copy):
    definition = problem_copy / "definition.json"
    doc = json.loads(definition.read_text())
    doc["reference"] = "import time\nimport torch\n\ndef run(x, y):\n    time.sleep(0.5)\n    return x + y\n"
    definition.write_text(json.dumps(doc))
    events = []
    suite = evaluate(
        load_problem(problem_copy),
        solution("vector_add_torch"),
        quick(cases=[FIRST], timeout_s=4),
        progress=events.append,
    )
    (result,) = suite.cases
    assert result.status == "TIMEOUT" and result.verdict.value == "timeout", result.log
    assert result.log.startswith("reference process") and "time limit" in result.log
    assert [e.phase for e in events][0] == "load" and events[-1].phase == "done" and events[-1].result is result


def test_a_reference_that_cannot_run_here_is_blamed_not_the_solution_that_copies_it(problem_copy, tmp_path):
    """A reference that hard-codes a device this run lacks (or raises for any reason) fails as itself,
    INVALID_REFERENCE, even when the solution is the same code and would fail the same way first."""
    from harness_testkit import write_solution

    code = "import torch\n\ndef run(x, y):\n    return (x + y).to('cuda:4095')\n"  # no such device anywhere
    definition = problem_copy / "definition.json"
    doc = json.loads(definition.read_text())
    doc["reference"] = code
    definition.write_text(json.dumps(doc))
    copied = write_solution(
        tmp_path / "copy", code.replace("def run(x, y):\n    return", "def run(x, y, z):\n    z.copy_"), dps=True
    )
    suite = evaluate(load_problem(problem_copy), copied, quick(cases=[FIRST], timeout_s=60, device="cpu"))
    (result,) = suite.cases
    assert result.status == "INVALID_REFERENCE", (result.status, result.log)
    assert "reference" in result.log
