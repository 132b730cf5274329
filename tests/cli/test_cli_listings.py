"""Listings say what they leave out ("showing 1 of 2") and why they are empty, on stderr, so that
--json and --jsonl stay the API's documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "sample"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("listings") / "s.db")
    assert CliRunner().invoke(app, ["import", str(SAMPLE), "--db", path]).exit_code == 0
    return path


def runs(db: str, *args: str):
    result = CliRunner().invoke(app, ["runs", "--db", db, *args])
    assert result.exit_code == 0, result.output
    return result


def test_a_shortened_listing_says_how_many_match(db):
    table = runs(db, "--limit", "1")
    assert "1 of 2 runs" in table.stdout
    assert "showing 1 of 2 matching runs" in table.stderr and "--limit 0" in table.stderr
    as_json = runs(db, "--limit", "1", "--json")
    assert len(json.loads(as_json.stdout)) == 1 and "showing 1 of 2" in as_json.stderr
    lines = runs(db, "--limit", "1", "--jsonl")
    assert len(lines.stdout.splitlines()) == 1 and "showing 1 of 2" in lines.stderr


def test_a_whole_listing_adds_no_note(db):
    for args in ((), ("--limit", "2"), ("--limit", "0"), ("--json",)):
        result = runs(db, *args)
        assert result.stderr == "", (args, result.stderr)


def test_an_empty_listing_says_which_filters_matched_nothing(db):
    result = runs(db, "--hardware", "H200", "--jsonl")
    assert result.stdout == ""  # still valid JSON Lines: no rows
    assert "no runs match --hardware H200" in result.stderr and "architecture" in result.stderr
    result = runs(db, "--comparison-key", "nope", "--source", "sol-execbench")
    assert "no runs match --comparison-key nope --source sol-execbench" in result.stderr
    assert len(json.loads(runs(db, "--hardware", "B200", "--json").stdout)) == 2  # the seeds' GPU matches


@pytest.mark.parametrize("limit", ["1000001", "99999999999999999999"])
def test_limits_past_the_bound_are_usage_errors(db, limit):
    result = CliRunner().invoke(app, ["runs", "--db", db, "--limit", limit])
    assert result.exit_code == 2 and "--limit" in result.output and "Traceback" not in result.output
