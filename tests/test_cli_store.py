"""The store commands end to end through the Typer app: import, verify, runs, show, export, stats."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from catalog_kit import catalog_lines, write_catalog
from kernelindex.cli import app

SAMPLE = Path(str(resources.files("kernelindex") / "sample"))


@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "cli.db")


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def test_import_show_and_verify_the_seed_runs(db):
    first = run("import", str(SAMPLE), "--db", db, "--json")
    assert json.loads(first.stdout)[0]["added"] == {"runs": 2, "measurements": 2, "protocols": 2, "environments": 2}
    again = json.loads(run("import", str(SAMPLE), "--db", db, "--json").stdout)[0]
    assert again["added"] == {} and again["alreadyPresent"] == {"runs": 2}
    shown = run("show", "149b7c1a", "--db", db).stdout
    assert "sha256:149b7c1a" in shown and "f41e" in shown.replace("\n", "").replace(" ", "")
    detail = json.loads(run("show", "sha256:deb0ae25", "--db", db, "--json").stdout)
    assert detail["digest"].startswith("sha256:deb0ae25") and detail["digest"].endswith("8bc6")
    manifest = detail["manifest"]  # the API's run view: the published records ride along in its manifest
    assert manifest["protocol"]["kind"] == "BenchmarkProtocol"
    assert manifest["environment"]["kind"] == "ExecutionEnvironment"
    assert detail["measurements"][0]["value"] == 7699
    assert detail["evidence"]["level"] == "reported" and detail["evidence"]["reasons"]
    listed = json.loads(run("runs", "--db", db, "--json").stdout)
    assert sorted(r["evidence"]["level"] for r in listed) == ["reported", "reported"]
    # 6 records (2 runs, 2 protocols, 2 environments) and 2 measurements: 6 digest rows, 8 column rows, 8 leaves
    assert run("verify", "--db", db).stdout.strip() == "22 records checked, 0 mismatches"


def test_show_refuses_unknown_short_and_ambiguous_names(db):
    import sqlite3

    run("import", str(SAMPLE), "--db", db)
    # the same refusals as the API's (one resolver): unknown, too short, not an id at all
    assert "no run with id or digest '00000000'" in run("show", "00000000", "--db", db, code=1).stderr
    assert "at least 8 hex characters" in run("show", "149b7c", "--db", db, code=1).stderr
    assert "no run with id or digest 'not-a-digest'" in run("show", "not-a-digest", "--db", db, code=1).stderr
    # a genuine 12-character collision cannot be made on demand: plant a row that shares one
    with sqlite3.connect(db) as conn:
        columns = [r[1] for r in conn.execute("pragma table_info(runs)") if r[1] != "seq"]
        copy = ", ".join(
            "'01900000-0000-7000-8000-000000000001'"
            if c == "id"
            else "substr(run_digest, 1, 19) || 'ffff' || substr(run_digest, 24)"
            if c == "run_digest"
            else c
            for c in columns
        )
        conn.execute(
            f"insert into runs ({', '.join(columns)}) select {copy} from runs where run_digest like 'sha256:149b7c1a%'"
        )
    message = run("show", "149b7c1a", "--db", db, code=1).stderr
    assert "matches 2 runs" in message
    assert run("show", "01900000-0000-7000-8000-000000000001", "--db", db).exit_code == 0


def test_runs_filters_and_json(db, tmp_path):
    run("import", str(write_catalog(tmp_path / "small.jsonl.zst")), str(SAMPLE), "--db", db)
    everything = json.loads(run("runs", "--db", db, "--json").stdout)
    assert len(everything) == 4
    toy = json.loads(run("runs", "--operation", "toy_scale", "--db", db, "--json").stdout)  # by alias
    assert len(toy) == 2 and {r["operation"] for r in toy} == {"toy-scale"}
    assert len(json.loads(run("runs", "--source", "sol-execbench", "--db", db, "--json").stdout)) == 2
    assert len(json.loads(run("runs", "--hardware", "h100", "--db", db, "--json").stdout)) == 2
    assert len(json.loads(run("runs", "--hardware", "sm_100", "--db", db, "--json").stdout)) == 2
    assert json.loads(run("runs", "--status", "timeout", "--db", db, "--json").stdout) == []
    wl_digest = json.loads(run("show", toy[0]["id"], "--db", db, "--json").stdout)["identity"]["workload"]["digest"]
    assert len(json.loads(run("runs", "--workload", wl_digest[:15], "--db", db, "--json").stdout)) == 2
    table = run("runs", "--operation", "toy-scale", "--db", db).stdout
    assert "2 runs" in table and "toy-scale" in table


def test_export_then_import_into_a_fresh_store(db, tmp_path):
    lines = catalog_lines()
    run("import", str(write_catalog(tmp_path / "small.jsonl.zst", lines)), "--db", db)
    out = tmp_path / "out.jsonl.zst"
    assert "rows written" in run("export", str(out), "--db", db).stdout
    fresh = str(tmp_path / "fresh.db")
    report = json.loads(run("import", str(out), "--db", fresh, "--json").stdout)[0]
    assert report["added"]["runs"] == 2 and report["lines"] == len(lines)
    stats = json.loads(run("stats", "--db", fresh, "--json").stdout)
    assert (
        stats["tables"]["runs"] == 2
        and stats["cohorts"] == 1
        and stats["pendingLinks"] == {"workload": 0, "implementation": 0}
    )
    assert "runs from toy-source" in run("stats", "--db", fresh).stdout
    assert run("export", str(tmp_path / "out.json"), "--db", db, code=2).stderr.startswith("error:")


def test_verify_fails_with_exit_1_on_a_tampered_store(db, tmp_path):
    import sqlite3

    run("import", str(write_catalog(tmp_path / "small.jsonl.zst")), "--db", db)
    with sqlite3.connect(db) as conn:
        conn.execute("update runs set run_digest = 'sha256:' || substr(run_digest, 8, 63) || 'f' where seq = 1")
    result = run("verify", "--db", db, code=1)
    # the digest against its record, the column against its manifest, the leaf against the row
    assert result.stdout.strip() == "40 records checked, 3 mismatches"
    assert "runs" in result.stderr and "run_digest" in result.stderr and "log_blocks" in result.stderr


def test_database_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    run("import", str(SAMPLE))
    assert (tmp_path / "env.db").exists()
    assert json.loads(run("stats", "--json").stdout)["tables"]["runs"] == 2


def test_unsupported_inputs_say_so(db, tmp_path):
    weird = tmp_path / "notes.txt"
    weird.write_text("hello")
    assert "unknown file type" in run("import", str(weird), "--db", db, code=1).stderr
    assert "no such file" in run("import", str(tmp_path / "absent.json"), "--db", db, code=1).stderr
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    assert "neither definition.json" in run("import", str(empty_dir), "--db", db, code=1).stderr


def test_problem_folders_and_trace_files_go_to_their_importers(db, tmp_path):
    """Dispatch only: what those importers accept is tested with them (harness helper)."""
    from kernelindex.ingest.paths import kind_of

    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"definition": "x", "evaluation": {}}) + "\n")
    catalog = write_catalog(tmp_path / "plain.jsonl")
    problem = tmp_path / "problem"
    problem.mkdir()
    (problem / "definition.json").write_text("{}")
    assert [kind_of(p) for p in (traces, catalog, problem)] == ["traces", "catalog", "problem"]
    # both refuse these hand-made stubs with a message naming the file
    assert str(traces) in run("import", str(traces), "--db", db, code=1).stderr
    assert str(problem / "definition.json") in run("import", str(problem), "--db", db, code=1).stderr
    # a plain (uncompressed) .jsonl catalog imports like a .jsonl.zst one
    assert json.loads(run("import", str(catalog), "--db", db, "--json").stdout)[0]["added"]["runs"] == 2
