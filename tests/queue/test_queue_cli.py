"""The queue's commands as the README writes them: `submit` then `queue list` keeps identifiers whole
when piped; `campaign --solutions` takes a shell glob's several files. No Ray, no server."""

from __future__ import annotations

import json
import re

import pytest
from queue_kit import FIXTURES, VECTOR_ADD, VECTOR_ADD_SOLUTION
from typer.testing import CliRunner

from kernelindex.cli import app


def test_submit_then_queue_list_shows_whole_request_ids(tmp_path):
    db = str(tmp_path / "queue.db")
    made = CliRunner().invoke(
        app, ["submit", str(VECTOR_ADD), "--solution", str(VECTOR_ADD_SOLUTION), "--replicas", "2", "--db", db]
    )
    assert made.exit_code == 0, made.output
    request_id = re.search(r"queued rerun request (\S+) \(cpu, 2 runner\(s\)\)", made.output).group(1)
    listed = CliRunner().invoke(app, ["queue", "list", "--db", db])
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if request_id in line)  # the id on one line, unfolded
    assert "queued" in row and "vector_add_f32" in row and "0/6" in row


def test_campaign_takes_every_file_after_solutions(tmp_path):
    """`--solutions a.json b.json` leaves b.json among the arguments: it is read as a solution (here one
    for another problem, refused by name), not as a problem folder; and solutions alone are refused."""
    other = FIXTURES / "solutions" / "softmax_torch" / "solution.json"
    db = str(tmp_path / "campaign.db")
    result = CliRunner().invoke(
        app, ["campaign", str(VECTOR_ADD), "--solutions", str(VECTOR_ADD_SOLUTION), str(other), "--db", db]
    )
    assert result.exit_code == 1
    assert f"{other}: its definition is none of the given problems" in result.output
    assert "not a problem folder" not in result.output
    alone = CliRunner().invoke(app, ["campaign", "--solutions", str(VECTOR_ADD_SOLUTION), str(other), "--db", db])
    assert alone.exit_code == 1 and "no problem given" in alone.output
    assert not (tmp_path / "campaign.db").exists()  # refused before any store was made


def test_a_gpu_runner_without_that_gpu_refuses_to_start(tmp_path):
    """It would only lease jobs to give them back: it stops before its first call to the server."""
    from kernelindex.records.signing import new_private_key, private_key_to_pem

    key = tmp_path / "runner.key"
    key.write_bytes(private_key_to_pem(new_private_key()))
    result = CliRunner().invoke(
        app, ["runner", "--server", "http://127.0.0.1:9", "--key", str(key), "--hardware", "H200", "--gpus", "0,99"]
    )
    assert result.exit_code == 1
    assert "no " in result.output and "cuda:99" in result.output and "127.0.0.1:9" not in result.output


def test_runner_and_campaign_refuse_to_run_unverified_by_default(tmp_path, monkeypatch):
    """Where no sandbox can be made, a runner or a campaign would store every run as merely reproducible:
    by default both refuse before anything starts, and say why and what to pass instead."""
    from kernelindex.harness import sandbox
    from kernelindex.records.signing import new_private_key, private_key_to_pem

    why = f"bubblewrap is not installed (test {tmp_path.name})"
    monkeypatch.setattr(sandbox, "available", lambda: (False, why))
    key = tmp_path / "runner.key"
    key.write_bytes(private_key_to_pem(new_private_key()))
    runner = CliRunner().invoke(app, ["runner", "--server", "http://127.0.0.1:9", "--key", str(key), "--once"])
    assert runner.exit_code == 1 and why in runner.output and "--sandbox auto" in runner.output
    db = tmp_path / "campaign.db"
    campaign = CliRunner().invoke(
        app, ["campaign", str(VECTOR_ADD), "--solutions", str(VECTOR_ADD_SOLUTION), "--db", str(db)]
    )
    assert campaign.exit_code == 1 and why in campaign.output and not db.exists()
    # told to, the campaign goes on past that check (to the next refusal: a solution of another problem)
    other = FIXTURES / "solutions" / "softmax_torch" / "solution.json"
    told = CliRunner().invoke(
        app, ["campaign", str(VECTOR_ADD), "--solutions", str(other), "--sandbox", "auto", "--db", str(db)]
    )
    assert told.exit_code == 1 and "its definition is none of the given problems" in told.output
    bad = CliRunner().invoke(app, ["campaign", str(VECTOR_ADD), "--solutions", str(other), "--sandbox", "maybe"])
    assert bad.exit_code == 1 and "--sandbox must be one of" in bad.output


def test_a_shortened_queue_list_says_how_many_requests_there_are(tmp_path):
    db = str(tmp_path / "queue.db")
    for _ in range(3):
        made = CliRunner().invoke(app, ["submit", str(VECTOR_ADD), "--solution", str(VECTOR_ADD_SOLUTION), "--db", db])
        assert made.exit_code == 0, made.output
    listed = CliRunner().invoke(app, ["queue", "list", "--db", db, "--limit", "2", "--json"])
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)) == 2
    assert "showing the newest 2 of 3 requests" in listed.stderr
    assert CliRunner().invoke(app, ["queue", "list", "--db", db]).stderr == ""  # all shown: nothing to say


SECOND_CASE = "3a1f0e2c-0000-4000-8000-000000000002"  # of vector_add's two cases


def _submit(db: str, *extra: str):
    return CliRunner().invoke(
        app, ["submit", str(VECTOR_ADD), "--solution", str(VECTOR_ADD_SOLUTION), "--db", db, *extra]
    )


def test_submit_keeps_a_request_to_the_cases_given(tmp_path):
    db = str(tmp_path / "queue.db")
    made = _submit(db, "--cases", SECOND_CASE, "--json")
    assert made.exit_code == 0, made.output
    shown = CliRunner().invoke(app, ["queue", "show", json.loads(made.stdout)["id"], "--db", db])
    assert json.loads(shown.stdout)["protocol"]["cases"] == [SECOND_CASE]
    for cases, expected in (("3a1f0e2c", "2 cases of the problem's 2"), ("ffff0000", "no case of the problem's 2")):
        refused = _submit(db, "--cases", cases)
        assert refused.exit_code == 1 and f"cases: case {cases!r}: {expected}" in refused.stderr, refused.output
    assert _submit(db, "--cases", ",").exit_code == 2


@pytest.mark.parametrize("value", ["0", "101", "99999999999999999999"])
def test_submit_bounds_max_attempts(tmp_path, value):
    refused = _submit(str(tmp_path / "queue.db"), "--max-attempts", value)
    assert isinstance(refused.exception, SystemExit) and refused.exit_code in (1, 2), refused.output
    assert "max_attempts" in refused.output or "--max-attempts" in refused.output


@pytest.mark.parametrize("args", [["--memory-mb", "10"], ["--memory-mb", "99999999999999999999"]])
def test_runner_and_campaign_bound_the_memory_cap(tmp_path, args):
    key = tmp_path / "r.key"
    for command in (["runner", "--server", "http://127.0.0.1:9", "--key", str(key)], ["campaign", "x", "-s", "y.json"]):
        refused = CliRunner().invoke(app, [*command, *args])
        assert refused.exit_code == 2 and "--memory-mb" in refused.output, refused.output


def test_campaign_keeps_to_the_cases_given(tmp_path):
    refused = CliRunner().invoke(
        app, ["campaign", str(VECTOR_ADD), "-s", str(VECTOR_ADD_SOLUTION), "--cases", "ffff0000", "--sandbox", "off"]
    )
    assert refused.exit_code == 1 and "--cases ffff0000: no case of the given problems" in refused.output
