"""Evaluations become KernelIndex records, stored as verified runs; `kernelindex eval` end to end."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from harness_testkit import PROBLEMS, SOLUTIONS, problem, quick, solution
from kernelindex.harness.records import evaluation_records, problem_records, record_evaluation
from kernelindex.harness.runner import evaluate
from kernelindex.records.canonical import digest
from kernelindex.records.models import parse_record


@pytest.fixture(scope="module")
def moe_suite():
    return evaluate(problem("moe_gather_scatter"), solution("moe_gather_scatter_torch"), quick())


@pytest.fixture
def store(tmp_path):
    from kernelindex.store import open_store

    return open_store(str(tmp_path / "ki.db"))


def test_problem_records_link_up():
    records = problem_records(PROBLEMS / "moe_gather_scatter")
    assert [r["kind"] for r in records] == ["OperationSpec", "WorkloadCase", "WorkloadCase", "WorkloadSuite"]
    op = records[0]
    assert op["spec"]["axes"]["flat"] == {"role": "derived", "type": "integer", "expression": "batch * hidden"}
    assert {i["name"]: i.get("scalar") for i in op["spec"]["inputs"]}["alpha"] == {"dtype": "fp32"}
    case = records[1]["spec"]
    assert case["operationSpecDigest"] == digest(op) and case["scalars"]["alpha"] == {"dtype": "fp32", "value": 0.5}
    assert case["tensors"]["token_indices"]["data"]["generator"] == "custom" and case["tensors"]["bias"]["shape"] == [1]
    assert case["tensors"]["bias"]["data"]["parameters"] == {"rank": 0}
    assert case["correctness"]["maxAbsoluteError"] == 1e-5 and records[2]["spec"]["correctness"]["maxAbsoluteError"] == 1e-2
    assert [c["externalId"] for c in records[3]["spec"]["cases"]] == [c.uuid for c in problem("moe_gather_scatter").cases]


def test_evaluation_records_are_valid_and_carry_the_evidence(moe_suite):
    records = evaluation_records(moe_suite)
    for record in [records.implementation, records.protocol, records.environment, *records.case_runs, records.suite_run]:
        parse_record(record)  # raises on any schema problem
    run = records.case_runs[0]["spec"]
    case = moe_suite.cases[0]
    assert run["status"] == "passed" and run["workloadDigest"] == digest(records.problem.cases[case.case.uuid])
    assert run["implementationDigest"] == digest(records.implementation)
    assert run["timing"]["latencyNs"]["median"] == round(case.latency.median) and run["timing"]["samples"] == len(case.samples_ns)
    raw = next(a for a in records.artifacts if a.digest == run["evidence"]["rawSamples"]["digest"])
    assert json.loads(raw.content)["solution"] == case.samples_ns
    protocol = records.protocol["spec"]
    assert protocol["harness"]["name"] == "kernelindex-harness" and protocol["measurement"]["timer"] == "monotonic_clock"
    assert protocol["measurement"]["warmupIterations"] == 2 and protocol["measurement"]["measuredIterations"] == 8
    env = records.environment["spec"]
    assert env["software"]["framework"]["name"] == "pytorch" and env["hardware"]["product"]
    suite = records.suite_run["spec"]
    assert suite["workloadDigest"] == digest(records.problem.suite) and suite["sourceNative"]["metrics"]["fast_1_total"] == 2
    src = records.implementation["spec"]
    assert src["source"]["contentDigest"].startswith("sha256:") and src["callable"]["interface"] == "destination_passing"


def test_recorded_runs_are_verified_and_recording_twice_adds_nothing(moe_suite, store):
    from kernelindex.ranking.evidence_facts import evidence_for_run
    from kernelindex.store.reads.runs import RunFilter, list_runs

    stored = record_evaluation(store, moe_suite)
    assert len(stored.run_ids) == 3 and all(stored.run_ids.values())
    with store.begin() as conn:
        runs, _ = list_runs(conn, RunFilter(source="kernelindex-harness", limit=10))
        assert len(runs) == 3
        for run_digest in stored.case_run_digests + [stored.suite_run_digest]:
            assert evidence_for_run(conn, run_digest).level == "verified"
    again = record_evaluation(store, moe_suite)
    assert not any(again.run_ids.values())


def test_runs_recorded_with_a_runner_key_are_signed_by_it(moe_suite, store):
    from kernelindex.ranking.evidence_facts import evidence_for_runs
    from kernelindex.records.signing import key_id, new_private_key

    key = new_private_key()
    stored = record_evaluation(store, moe_suite, private_key=key)
    with store.begin() as conn:
        evidence = evidence_for_runs(conn, list(stored.run_ids))
    assert {e.level for e in evidence.values()} == {"verified"}
    assert all(key_id(key.public_key())[:19] in " ".join(e.reasons) and "signature holds" in " ".join(e.reasons)
               for e in evidence.values())


def test_cli_eval_prints_a_table_writes_traces_and_records(tmp_path):
    from kernelindex.cli import app

    trace = tmp_path / "trace.jsonl"
    db = tmp_path / "cli.db"
    args = ["eval", str(PROBLEMS / "vector_add"), "--solution", str(SOLUTIONS / "vector_add_torch" / "solution.json"),
            "--rounds", "2", "--warmup", "1", "--iterations", "5", "-o", str(trace), "--record", "--db", str(db)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "PASSED" in result.output and "geomean" in result.output and "stored 3 new run(s)" in result.output
    assert len(trace.read_text().splitlines()) == 2
    shown = CliRunner().invoke(app, ["runs", "--db", str(db)])
    assert shown.exit_code == 0 and "3 runs" in shown.output
    suite_digest = result.output.split("suite run")[1].split()[0]
    detail = CliRunner().invoke(app, ["show", suite_digest, "--db", str(db)])
    assert detail.exit_code == 0 and "kernelindex-harness" in detail.output and "vector_add_f32" in detail.output


def test_cli_eval_refuses_bad_files_and_fails_on_failed_cases(tmp_path):
    from kernelindex.cli import app

    bad = tmp_path / "solution.json"
    bad.write_text('{"name": "x", "definition": "d", "spec": {"languages": ["pytorch"], "entry_point": "nope"}}')
    result = CliRunner().invoke(app, ["eval", str(PROBLEMS / "vector_add"), "--solution", str(bad)])
    assert result.exit_code == 1 and "spec.entry_point" in result.output
    result = CliRunner().invoke(app, ["eval", str(PROBLEMS / "broken_reference"), "--solution", str(SOLUTIONS / "vector_add_torch" / "solution.json"),
                                      "--rounds", "1", "--warmup", "1", "--iterations", "2"])
    assert result.exit_code == 1 and "INVALID_REFERENCE" in result.output
