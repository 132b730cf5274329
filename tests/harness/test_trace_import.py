"""Trace files from the upstream tools are stored as reported runs with their source, never verified."""

from __future__ import annotations

import json

import pytest
from harness_testkit import PROBLEMS, SOLUTIONS

LINE = {
    "definition": "vector_add_f32",
    "solution": "vector_add_torch",
    "workload": {
        "uuid": "3a1f0e2c-0000-4000-8000-000000000001",
        "axes": {"n": 1000},
        "inputs": {"x": {"type": "random"}, "y": {"type": "random"}},
    },
    "evaluation": {
        "status": "PASSED",
        "environment": {"hardware": "NVIDIA B200", "libs": {"torch": "2.9.0", "cuda": "13.0"}},
        "timestamp": "2026-07-01T10:00:00",
        "log": "",
        "correctness": {"max_relative_error": 1e-6, "max_absolute_error": 2e-7, "has_nan": False, "has_inf": False},
        "performance": {"latency_ms": 0.0123, "reference_latency_ms": 0.05, "speedup_factor": 4.065},
    },
}


@pytest.fixture
def store(tmp_path):
    from kernelindex.store import open_store

    return open_store(str(tmp_path / "traces.db"))


def _write(tmp_path, lines):
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_traces_become_reported_runs_linked_to_the_problem(tmp_path, store):
    from kernelindex.formats.records import trace_links
    from kernelindex.ingest.traces import import_traces
    from kernelindex.ranking.evidence_facts import evidence_for_runs
    from kernelindex.store.reads.runs import RunFilter, list_runs

    second = json.loads(json.dumps(LINE))
    second["workload"]["uuid"] = "3a1f0e2c-0000-4000-8000-000000000002"
    second["evaluation"]["status"] = "REWARD_HACK"
    del second["evaluation"]["performance"]
    path = _write(tmp_path, [LINE, second])
    links = trace_links(PROBLEMS / "vector_add", SOLUTIONS / "vector_add_torch" / "solution.json")
    report = import_traces(store, path, links=links)
    assert report.added["runs"] == 2 and report.added["operations"] == 1
    with store.begin() as conn:
        runs, _ = list_runs(conn, RunFilter(source="upstream-trace", limit=10))
        assert sorted(r["status"] for r in runs) == ["passed", "suspected_reward_hack"]
        levels = evidence_for_runs(conn, [r["run_digest"] if "run_digest" in r else r["runDigest"] for r in runs])
        assert {e.level for e in levels.values()} == {"reported"}
    again = import_traces(store, path, links=links)
    assert again.added["runs"] == 0 and again.present["runs"] == 2


def test_traces_without_their_problem_keep_pending_links(tmp_path, store):
    from kernelindex.ingest.traces import import_traces

    report = import_traces(store, _write(tmp_path, [LINE]))
    assert report.added["runs"] == 1 and report.added["workloads"] == 0


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda l: l["evaluation"].update(status="GREAT"), "evaluation.status"),
        (lambda l: l["evaluation"]["performance"].update(latency_ms="fast"), "evaluation.performance.latency_ms"),
        (lambda l: l["evaluation"].update(timestamp="yesterday"), "evaluation.timestamp"),
        (lambda l: l.pop("workload"), "workload"),
        (lambda l: l["evaluation"]["environment"].pop("hardware"), "evaluation.environment.hardware"),
    ],
)
def test_bad_trace_lines_are_refused_whole(tmp_path, store, change, field):
    from kernelindex.ingest.problems import ImportFailed
    from kernelindex.ingest.traces import import_traces

    bad = json.loads(json.dumps(LINE))
    change(bad)
    with pytest.raises(ImportFailed) as caught:
        import_traces(store, _write(tmp_path, [LINE, bad]))
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (2, field)
    with store.begin() as conn:
        from kernelindex.store.reads.runs import RunFilter, list_runs

        assert list_runs(conn, RunFilter(limit=10)) == ([], None)  # nothing of the file was stored


def test_cli_import_links_traces_to_the_problem_and_solution_given(tmp_path):
    from typer.testing import CliRunner

    from kernelindex.cli import app

    db, path = str(tmp_path / "cli.db"), _write(tmp_path, [LINE])
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "import",
            str(path),
            "--db",
            db,
            "--json",
            "--problem",
            str(PROBLEMS / "vector_add"),
            "--solution",
            str(SOLUTIONS / "vector_add_torch" / "solution.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    traces = [item for item in json.loads(result.stdout) if item["kind"] == "traces"]
    assert traces[0]["added"]["runs"] == 1 and traces[0]["added"]["workloads"] >= 1
    shown = runner.invoke(app, ["runs", "--source", "upstream-trace", "--db", db, "--json"])
    (run,) = json.loads(shown.stdout)
    assert run["workloadId"] is not None, run


@pytest.mark.parametrize(
    ("product", "architecture"), [("NVIDIA H20", "sm_90"), ("NVIDIA L4", "sm_89"), ("NVIDIA GeForce RTX 4090", "sm_89")]
)
def test_trace_hardware_gets_the_catalogs_architecture(tmp_path, store, product, architecture):
    from sqlalchemy import select

    from kernelindex.ingest.traces import import_traces
    from kernelindex.store.tables import runs

    line = json.loads(json.dumps(LINE))
    line["evaluation"]["environment"]["hardware"] = product
    import_traces(store, _write(tmp_path, [line]))
    with store.engine.connect() as conn:
        assert conn.execute(select(runs.c.hardware_vendor, runs.c.hardware_architecture)).one() == (
            "nvidia",
            architecture,
        )
