"""Store commands with bad arguments: a clear usage error or message, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "kernelindex" / "sample"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("cli") / "s.db")
    assert CliRunner().invoke(app, ["import", str(SAMPLE), "--db", path]).exit_code == 0
    return path


@pytest.mark.parametrize(
    "args, code, expected",
    [
        # a negative LIMIT was unlimited on SQLite and a driver error on PostgreSQL
        (["runs", "--limit", "-1"], 2, "--limit"),
        # a negative --limit silently dropped the last runs of each group (a Python slice)
        (["rank", "--limit", "-5", "x"], 2, "--limit"),
        (["rank", "--limit", "0", "x"], 2, "--limit"),
        # writing into a missing folder was a FileNotFoundError traceback
        (["export", "/nonexistent-qa/dir/x.jsonl.zst"], 1, "does not exist"),
    ],
)
def test_bad_arguments_are_refused_cleanly(db, args, code, expected):
    result = CliRunner().invoke(app, [*args, "--db", db])
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and expected in result.output, result.output


PROBLEM = Path(__file__).resolve().parents[1] / "src" / "kernelindex" / "problems" / "moe_load_balance_bwd"
SOLUTION = Path(__file__).resolve().parents[1] / "src" / "kernelindex" / "kernels" / "moe_load_balance_bwd"


@pytest.mark.parametrize(
    "args, option",
    [
        # a count past a C long was an OverflowError traceback
        (["eval", str(PROBLEM), "--solution", str(SOLUTION / "solution.json"), "--rounds", "9" * 20], "--rounds"),
        (
            ["eval", str(PROBLEM), "--solution", str(SOLUTION / "solution.json"), "--iterations", "10001"],
            "--iterations",
        ),
        (["eval", str(PROBLEM), "--solution", str(SOLUTION / "solution.json"), "--memory-mb", "9" * 20], "--memory-mb"),
        (["campaign", str(PROBLEM), "-s", str(SOLUTION / "solution.json"), "--warmup", "9" * 20], "--warmup"),
        (["mcp", "--transport", "http", "--port", "99999999"], "--port"),
        (["rank", "--limit", "9" * 20, "x"], "--limit"),
        (["search", "042", "--rows", "9" * 20], "--rows"),
    ],
)
def test_counts_past_their_bounds_are_usage_errors(db, args, option):
    result = CliRunner().invoke(app, [*args, "--db", db])
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2 and option in result.output and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("source", ["flashinfer", "sol-api", "auto"])
def test_an_upstream_import_refuses_a_solution_it_would_ignore(tmp_path, source):
    """--solution is for trace files; with --from it was silently dropped."""
    db = tmp_path / "never.db"
    result = CliRunner().invoke(
        app, ["import", "--from", source, str(SAMPLE), "--solution", str(SOLUTION / "solution.json"), "--db", str(db)]
    )
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: --solution"), result.stderr
    assert "--from" in result.stderr and "Traceback" not in result.output
    assert not db.exists()  # refused before any store is opened
