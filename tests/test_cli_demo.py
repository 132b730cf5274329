"""The README's main job, `kernelindex demo`, without the server: the sample, our packs, a rerun."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernelindex.cli import app


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def runs(db: str, *filters: str) -> list[dict]:
    return json.loads(run("runs", "--db", db, "--limit", "0", "--json", *filters))


def test_demo_imports_the_sample_and_stores_verified_reruns(tmp_path):
    db = str(tmp_path / "demo.db")
    run("demo", "--no-serve", "--no-export", "--db", db)
    seeds = {r["digest"][:15] for r in runs(db) if r["source"] == "sol-execbench"}  # source row still pending
    assert seeds == {"sha256:149b7c1a", "sha256:deb0ae25"}
    ours = runs(db, "--source", "kernelindex-harness")
    assert len(ours) == 4 and all(r["status"] == "passed" and r["evidence"]["level"] == "verified" for r in ours)
    assert {r["operation"] for r in ours} == {
        "042-moe-expert-load-balancing-and-token-capacity-backward"
    }  # one slug spelling
    tables = json.loads(run("stats", "--db", db, "--json"))["tables"]
    # both packs: 16 cases and a suite each, plus the suite of exactly the 3 cases the demo reruns
    assert tables["workloads"] == 2 * 17 + 1
    # Each rerun is ranked in its group or kept out only as flagged by the harness (an unstable
    # spread, as on a loaded machine); every group with a ranked run got its first leader.
    groups = {
        json.dumps(g, sort_keys=True): g
        for r in ours
        for g in json.loads(run("rank", r["digest"], "--db", db, "--json"))
    }
    for r in ours:
        placed = [g for g in groups.values() if g["comparisonKey"] == r["comparisonKey"]]
        ranked = {row["runId"] for g in placed for row in g["rows"]}
        flagged = {e["runId"] for g in placed for e in g["excluded"] if e["reasons"] == ["flagged"]}
        assert r["id"] in ranked | flagged, (r["id"], placed)
    led = {g["comparisonKey"] for g in groups.values() if g["rows"]}
    assert tables["record_events"] >= len(led)
    # Running it again adds the new reruns (new measurements) but never a second copy of a record.
    run("demo", "--no-serve", "--no-export", "--db", db)
    everything = runs(db)
    assert len(runs(db, "--source", "kernelindex-harness")) == 8
    assert len({r["digest"] for r in everything}) == len(everything) == 2 + 8
    assert json.loads(run("stats", "--db", db, "--json"))["tables"]["workloads"] == tables["workloads"]
