"""A reference past its time limit is a TIMEOUT of the evaluation, not an invalid reference;
the parent says which side ran out and the estimate shows up in the progress events."""

from __future__ import annotations

import json
import time

from harness_testkit import quick, solution, write_solution

from kernelindex.formats.problem import load_problem
from kernelindex.harness.runner import evaluate

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"


def _with_reference(problem_copy, code: str) -> None:
    definition = problem_copy / "definition.json"
    doc = json.loads(definition.read_text())
    doc["reference"] = code
    definition.write_text(json.dumps(doc))


def _sleeping(tmp_path, seconds: float):
    """A right solution that sleeps ``seconds`` in each call."""
    code = f"import time\nimport torch\n\ndef run(x, y, z):\n    time.sleep({seconds})\n    torch.add(x, y, out=z)\n"
    return write_solution(tmp_path / "sleeping", code, dps=True)


def test_a_reference_that_hangs_after_its_rounds_is_a_timeout_of_the_evaluation(problem_copy):
    """Its rounds set the pace; a later call that outlasts that pace and the reserve ends the case."""
    _with_reference(
        problem_copy,
        "import time\nimport torch\n\nCALLS = [0]\n\ndef run(x, y):\n    CALLS[0] += 1\n"
        "    if CALLS[0] > 3:\n        time.sleep(3600)\n    return x + y\n",
    )
    events = []
    started = time.monotonic()
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
    assert time.monotonic() - started < 120  # the reserve, not the hour


def test_a_case_slower_than_its_budget_at_a_steady_pace_still_completes(problem_copy, tmp_path):
    """A reference and a solution each steadily slower than the case's budget allows in all (seconds a call on
    a CPU): every batch adds its calls at the reference's pace, so the protocol runs to its end and passes."""
    _with_reference(
        problem_copy, "import time\nimport torch\n\ndef run(x, y):\n    time.sleep(0.2)\n    return x + y\n"
    )
    suite = evaluate(load_problem(problem_copy), _sleeping(tmp_path, 0.3), quick(cases=[FIRST], timeout_s=1.2))
    (result,) = suite.cases
    assert result.status == "PASSED", result.log
    calls = 3 + 2 + sum(pair.calls for pair in result.pairs)  # rounds, warm-up, timed
    assert calls * 0.2 > 1.5 * 1.2  # the calls of each side took well past the reserve alone


def test_a_sleeping_solution_buys_itself_no_time(problem_copy, tmp_path):
    """The allowance comes from the reference's calls, never the solution's own: a solution far slower than
    SOLUTION_PACE times a quick reference runs on the reserve and times out."""
    suite = evaluate(load_problem(problem_copy), _sleeping(tmp_path, 1.0), quick(cases=[FIRST], timeout_s=3))
    (result,) = suite.cases
    assert result.status == "TIMEOUT", result.log
    assert result.log.startswith("solution process") and "time limit" in result.log


def test_a_reference_that_cannot_run_here_is_blamed_not_the_solution_that_copies_it(problem_copy, tmp_path):
    """A reference that hard-codes a device this run lacks (or raises for any reason) fails as itself,
    INVALID_REFERENCE, even when the solution is the same code and would fail the same way first."""
    code = "import torch\n\ndef run(x, y):\n    return (x + y).to('cuda:4095')\n"  # no such device anywhere
    _with_reference(problem_copy, code)
    copied = write_solution(
        tmp_path / "copy", code.replace("def run(x, y):\n    return", "def run(x, y, z):\n    z.copy_"), dps=True
    )
    suite = evaluate(load_problem(problem_copy), copied, quick(cases=[FIRST], timeout_s=60, device="cpu"))
    (result,) = suite.cases
    assert result.status == "INVALID_REFERENCE", (result.status, result.log)
    assert "reference" in result.log
