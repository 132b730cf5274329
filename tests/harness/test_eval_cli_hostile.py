"""``kernelindex eval`` with bad arguments: one clear error, a non-zero exit, no traceback, and no
evaluation started (everything that could fail after a long run is checked before it)."""

from __future__ import annotations

import json
import shutil

import pytest
from harness_testkit import PROBLEMS, SOLUTIONS
from typer.testing import CliRunner

from kernelindex.cli import app

PROBLEM = str(PROBLEMS / "vector_add")
SOLUTION = str(SOLUTIONS / "vector_add_torch" / "solution.json")
QUICK = ["--rounds", "1", "--warmup", "0", "--iterations", "1"]


def refused(args: list[str], *expected: str, code: int = 1) -> str:
    result = CliRunner().invoke(app, ["eval", *QUICK, *args])  # the later, bad value wins
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output, result.output
    assert "PASSED" not in result.output, "the evaluation ran before the bad argument was noticed"
    for want in expected:
        assert want in result.output, result.output
    return result.output


@pytest.fixture
def dotdot_solution(tmp_path):
    folder = tmp_path / "solution"
    shutil.copytree(SOLUTIONS / "vector_add_torch", folder)
    data = json.loads((folder / "solution.json").read_text())
    data["sources"] = [{"path": "../../add.py"}]
    (folder / "solution.json").write_text(json.dumps(data))
    return str(folder / "solution.json")


def test_missing_problem_folder(tmp_path):
    refused([str(tmp_path / "nope"), "-s", SOLUTION], "nope", "is not a problem folder")


def test_solution_source_path_with_dotdot(dotdot_solution):
    refused([PROBLEM, "-s", dotdot_solution], "sources[0].path", "without '..'")


@pytest.mark.parametrize(
    "cases, expected",
    [
        ("00000000-dead-beef-0000-000000000000", "no case '00000000-dead-beef-0000-000000000000'"),
        ("", "no case ''"),  # an empty prefix used to pick the first case silently
        ("3a1f0e2c-0000-4000-8000-00000000000", "matches"),  # ambiguous prefix: used to pick the first
    ],
)
def test_unknown_empty_or_ambiguous_case(cases, expected):
    refused([PROBLEM, "-s", SOLUTION, "--cases", cases], expected)


@pytest.mark.parametrize("device", ["bogus", "cuda:abc", "cuda0", "CPU"])
def test_bogus_device(device):
    refused([PROBLEM, "-s", SOLUTION, "--device", device], "--device must be cpu or cuda[:N]", code=2)


@pytest.mark.parametrize(
    "option, value",
    [("--iterations", "0"), ("--rounds", "0"), ("--timeout", "-1"), ("--memory-mb", "0"), ("--warmup", "-1")],
)
def test_out_of_range_counts_are_usage_errors(option, value):
    """A negative --timeout used to hang the evaluation; 0 timed iterations reported a latency."""
    refused([PROBLEM, "-s", SOLUTION, option, value], option, code=2)


def test_output_into_a_missing_folder_is_refused_before_evaluating(tmp_path):
    refused([PROBLEM, "-s", SOLUTION, "-o", str(tmp_path / "no" / "traces.jsonl")], "--output")
    refused([PROBLEM, "-s", SOLUTION, "-o", str(tmp_path)], "--output", "is a folder")


def test_unusable_key_or_store_is_refused_before_evaluating(tmp_path):
    db = str(tmp_path / "s.db")
    refused(
        [PROBLEM, "-s", SOLUTION, "--record", "--db", db, "--key", str(tmp_path / "missing.pem")],
        "--key",
        "No such file",
    )
    (tmp_path / "junk.pem").write_text("not a key")
    refused(
        [PROBLEM, "-s", SOLUTION, "--record", "--db", db, "--key", str(tmp_path / "junk.pem")],
        "--key",
        "not an unencrypted PEM private key",
    )
    refused(
        [PROBLEM, "-s", SOLUTION, "--record", "--db", str(tmp_path / "no" / "dir" / "s.db")], "cannot open the store"
    )


def test_markup_in_a_solutions_name_is_shown_as_text_and_loses_nothing(tmp_path):
    """A name made of Rich markup (unbalanced, so rendering it as markup raises) and terminal escapes:
    the evaluation is recorded and its trace written before anything is rendered, and the table shows
    the name as text."""
    folder = tmp_path / "solution"
    shutil.copytree(SOLUTIONS / "vector_add_torch", folder)
    data = json.loads((folder / "solution.json").read_text())
    data["name"] = "fast[/bold][link=file:///etc/passwd]x\x1b[2J[/"
    (folder / "solution.json").write_text(json.dumps(data))
    db, trace = tmp_path / "s.db", tmp_path / "trace.jsonl"
    result = CliRunner().invoke(
        app,
        ["eval", PROBLEM, "-s", str(folder / "solution.json"), *QUICK, "--record", "--db", str(db), "-o", str(trace)],
    )
    assert result.exit_code in (0, 1) and result.exception in (None, result.exception), repr(result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "\x1b[2J" not in result.output
    assert "fast[/bold][link=file:///etc/passwd]x" in result.output  # shown as it is written
    assert "stored " in result.output and len(trace.read_text().splitlines()) == 2
