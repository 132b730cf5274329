"""`kernelindex eval` with several solutions: one call runs them all, each in sandboxes of its own and
recorded apart, one's failure is not another's, one bar counts their verdicts, and a folder of
solutions is taken as its solutions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from kernelindex.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "harness" / "fixtures"
QUICK = ["--rounds", "2", "--warmup", "1", "--iterations", "4", "--pairs", "2"]


def _wrong(folder: Path) -> Path:
    """A copy of the honest vector-add solution that writes zeros."""
    doc = json.loads((FIXTURES / "solutions" / "vector_add_torch" / "solution.json").read_text())
    doc["name"] = "[bold]zeros[/bold]"
    doc["sources"] = [{"path": "solution.py", "content": "def run(x, y, z):\n    z.zero_()\n"}]
    doc["spec"]["entry_point"] = "solution.py::run"
    doc["spec"]["destination_passing_style"] = True
    folder.mkdir(parents=True)
    (folder / "wrong.json").write_text(json.dumps(doc))
    return folder


def test_several_solutions_are_run_and_recorded_apart(tmp_path):
    honest = tmp_path / "honest"
    shutil.copytree(FIXTURES / "solutions" / "vector_add_torch", honest)
    wrong = _wrong(tmp_path / "candidates")
    trace, db = tmp_path / "trace.jsonl", tmp_path / "ki.db"
    args = ["eval", str(FIXTURES / "problems" / "vector_add"), "--solution", str(honest / "solution.json")]
    args += ["--solution", str(wrong), *QUICK, "-o", str(trace), "--record", "--db", str(db)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output  # one of them failed
    assert result.output.count("stored 3 new run(s)") == 2, result.output  # two cases and a suite run each
    assert "[bold]zeros[/bold]" in result.output  # its name shown as text
    # no terminal here, so each step is a line of its own; each verdict's line carries the tally so far
    assert "2 solutions x 2 cases: 2 INCORRECT_NUMERICAL, 2 PASSED" in result.output, result.output
    assert "solution 2/2 case 2/2 3a1f0e2c INCORRECT_NUMERICAL" in result.output, result.output
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    statuses = {(line["solution"], line["evaluation"]["status"]) for line in lines}
    assert len(lines) == 4 and statuses == {
        ("vector_add_torch", "PASSED"),
        ("[bold]zeros[/bold]", "INCORRECT_NUMERICAL"),
    }
    shown = CliRunner().invoke(app, ["runs", "--db", str(db)])
    assert shown.exit_code == 0 and "6 runs" in shown.output, shown.output


def test_a_folder_without_solutions_is_refused_naming_it(tmp_path):
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    result = CliRunner().invoke(app, ["eval", str(FIXTURES / "problems" / "vector_add"), "--solution", str(empty)])
    assert result.exit_code == 1 and "nothing-here" in result.output and "no *.json" in result.output
