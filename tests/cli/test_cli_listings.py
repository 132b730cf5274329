"""Listings say what they leave out ("showing 1 of 2") and why they are empty, on stderr, so that
--json and --jsonl stay the API's documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.client import Client
from live_kit import serving_store

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


@pytest.fixture(scope="module")
def server(db):
    with serving_store(db) as url:
        yield url


def test_a_server_listing_says_how_many_match_on_the_server(db, server, monkeypatch):
    """The API's pages carry the total, the client reads it, and `runs --server` prints it as the store does."""
    monkeypatch.delenv("KERNELINDEX_SERVER", raising=False)
    with Client(server) as client:
        page = client.runs_page(limit=1)
        assert len(page.items) == 1 and page.total == 2 and page.next
        assert client.runs_page(cursor=page.next, limit=1).total == 2  # every page carries it
        assert client.runs_page(limit=1, hardware="no-such-gpu").total == 0  # a free-form filter matching nothing
    for args in (("--limit", "1"), ("--limit", "1", "--json"), ("--limit", "1", "--source", "sol-execbench")):
        local = runs(db, *args)
        remote = CliRunner().invoke(app, ["runs", "--server", server, *args])
        assert remote.exit_code == 0, remote.output
        assert "showing 1 of 2 matching runs" in remote.stderr and remote.stderr == local.stderr, args
        assert remote.stdout == local.stdout, args
    whole = CliRunner().invoke(app, ["runs", "--server", server, "--limit", "2"])
    assert whole.exit_code == 0 and "2 runs" in whole.stdout and whole.stderr == ""


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
