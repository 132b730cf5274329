"""Evaluations become KernelIndex records, stored as verified runs; `kernelindex eval` end to end."""

from __future__ import annotations

import json
import re

import pytest
from harness_testkit import PROBLEMS, SOLUTIONS, problem, quick, solution
from typer.testing import CliRunner

from kernelindex.formats.records import problem_records
from kernelindex.harness.records import evaluation_records
from kernelindex.harness.runner import evaluate
from kernelindex.records.canonical import digest
from kernelindex.records.models import parse_record

pytestmark = pytest.mark.xdist_group("harness_records")  # one worker evaluates moe_suite, not each (-n 2)


@pytest.fixture(scope="module")
def moe_suite():
    return evaluate(problem("moe_gather_scatter"), solution("moe_gather_scatter_torch"), quick())


@pytest.fixture
def store(tmp_path):
    from kernelindex.store import open_store

    return open_store(str(tmp_path / "ki.db"))


def record_evaluation(store, suite, private_key=None):
    from kernelindex.ingest.evaluations import store_evaluation

    with store.begin() as conn:
        return store_evaluation(conn, evaluation_records(suite), private_key)


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
    assert (
        case["correctness"]["maxAbsoluteError"] == 1e-5
        and records[2]["spec"]["correctness"]["maxAbsoluteError"] == 1e-2
    )
    assert [c["externalId"] for c in records[3]["spec"]["cases"]] == [
        c.uuid for c in problem("moe_gather_scatter").cases
    ]


def test_evaluation_records_are_valid_and_carry_the_evidence(moe_suite):
    records = evaluation_records(moe_suite)
    for record in [
        records.implementation,
        records.protocol,
        records.environment,
        *records.case_runs,
        records.suite_run,
    ]:
        parse_record(record)  # raises on any schema problem
    run = records.case_runs[0]["spec"]
    case = moe_suite.cases[0]
    assert run["status"] == "passed" and run["workloadDigest"] == digest(records.problem.cases[case.case.uuid])
    assert run["implementationDigest"] == digest(records.implementation)
    assert run["timing"]["latencyNs"]["median"] == round(case.latency.median) and run["timing"]["samples"] == len(
        case.samples_ns
    )
    raw = next(a for a in records.artifacts if a.digest == run["evidence"]["rawSamples"]["digest"])
    assert json.loads(raw.content)["solution"] == case.samples_ns
    protocol = records.protocol["spec"]
    assert (
        protocol["harness"]["name"] == "kernelindex-harness"
        and protocol["measurement"]["timer"] == "parent_batch_clock"
    )
    assert protocol["measurement"]["warmupIterations"] == 2 and protocol["measurement"]["measuredIterations"] == 8
    assert json.loads(raw.content)["inputNonce"] == moe_suite.nonce and len(moe_suite.nonce) == 32
    log = next(a for a in records.artifacts if a.digest == run["evidence"]["logs"]["digest"])
    assert moe_suite.nonce.encode() in log.content and b"sandbox: bubblewrap" in log.content
    # where the case's time went, by phase, adding up to the case's wall time
    cost = next(line for line in log.content.decode().splitlines() if line.startswith("harness cost: "))
    seconds = {name: float(value) for name, value in re.findall(r"(\w+) (\d+\.\d+) s", cost)}
    assert set(seconds) == {"setup", "inputs", "calibration", "reference", "solution", "checking", "harness", "case"}
    assert all(seconds[p] > 0 for p in ("setup", "inputs", "calibration", "reference", "solution", "checking"))
    assert abs(sum(v for k, v in seconds.items() if k != "case") - seconds["case"]) < 0.01
    env = records.environment["spec"]
    assert env["software"]["framework"]["name"] == "pytorch" and env["hardware"]["product"]
    suite = records.suite_run["spec"]
    assert (
        suite["workloadDigest"] == digest(records.problem.suite)
        and suite["sourceNative"]["metrics"]["fast_1_total"] == 2
    )
    src = records.implementation["spec"]
    assert (
        src["source"]["contentDigest"].startswith("sha256:") and src["callable"]["interface"] == "destination_passing"
    )


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
    stored = record_evaluation(store, moe_suite, key)
    with store.begin() as conn:
        evidence = evidence_for_runs(conn, list(stored.run_ids))
    assert {e.level for e in evidence.values()} == {"verified"}
    assert all(
        key_id(key.public_key())[:19] in " ".join(e.reasons) and "signature holds" in " ".join(e.reasons)
        for e in evidence.values()
    )


def test_cli_eval_prints_a_table_writes_traces_and_records(tmp_path):
    from kernelindex.cli import app

    trace = tmp_path / "trace.jsonl"
    db = tmp_path / "cli.db"
    args = [
        "eval",
        str(PROBLEMS / "vector_add"),
        "--solution",
        str(SOLUTIONS / "vector_add_torch" / "solution.json"),
        "--rounds",
        "2",
        "--warmup",
        "1",
        "--iterations",
        "5",
        "-o",
        str(trace),
        "--record",
        "--db",
        str(db),
    ]
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
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(PROBLEMS / "broken_reference"),
            "--solution",
            str(SOLUTIONS / "vector_add_torch" / "solution.json"),
            "--rounds",
            "1",
            "--warmup",
            "1",
            "--iterations",
            "2",
        ],
    )
    assert result.exit_code == 1 and "INVALID_REFERENCE" in result.output


def test_every_artifact_a_run_names_downloads_with_its_real_content(moe_suite, store):
    import hashlib

    from fastapi.testclient import TestClient

    from kernelindex.web.app import create_app

    records = evaluation_records(moe_suite)
    with store.begin() as conn:
        from kernelindex.ingest.evaluations import store_evaluation

        store_evaluation(conn, records)
    empty = "sha256:" + hashlib.sha256(b"").hexdigest()
    named = [ref for run in [*records.case_runs, records.suite_run] for ref in run["spec"]["evidence"].values()]
    named.append({"digest": records.implementation["spec"]["source"]["contentDigest"]})
    with TestClient(create_app(store=store)) as client:
        for ref in named:
            assert ref["digest"] != empty
            got = client.get(f"/artifacts/{ref['digest']}")
            assert got.status_code == 200, (ref, got.text[:200])
            assert "sha256:" + hashlib.sha256(got.content).hexdigest() == ref["digest"]
        log = client.get(records.case_runs[0]["spec"]["evidence"]["logs"]["uri"])
        assert log.headers["content-type"].startswith("text/plain") and b"input nonce" in log.content
        assert client.get("/artifacts/sha256:" + "0" * 64).status_code == 404
        assert client.get("/artifacts/not-a-digest").status_code == 400
        page = client.get(f"/r/{digest(records.case_runs[0])}")
        assert page.status_code == 200 and f'href="/artifacts/{named[0]["digest"]}"' in page.text


def test_a_partial_run_is_filed_under_its_own_suite(moe_suite):
    from dataclasses import replace

    partial = replace(moe_suite, cases=moe_suite.cases[:1])
    records = evaluation_records(partial)
    full = evaluation_records(moe_suite)
    assert records.suite_run["spec"]["workloadDigest"] == digest(records.suite) != digest(full.suite)
    assert [c["externalId"] for c in records.suite["spec"]["cases"]] == [moe_suite.cases[0].case.uuid]
    assert "-of-2-" in records.suite["metadata"]["name"] and records.suite in records.records()


def test_flagged_runs_are_kept_but_not_ranked_and_verified_runs_rank_with_an_interval(moe_suite, store):
    from dataclasses import replace

    from sqlalchemy import select

    from kernelindex.ingest.evaluations import store_evaluation
    from kernelindex.ranking.cohort import FLAGGED, rank_group
    from kernelindex.ranking.reads import rank_inputs
    from kernelindex.store.tables import runs

    clean = replace(moe_suite, cases=[replace(c, flags=[]) for c in moe_suite.cases])
    shaky = replace(moe_suite, cases=[replace(c, flags=["unstable"]) for c in moe_suite.cases])
    with store.begin() as conn:
        kept = store_evaluation(conn, evaluation_records(clean))
        flagged = store_evaluation(conn, evaluation_records(shaky))
    clean_run, shaky_run = kept.case_run_digests[0], flagged.case_run_digests[0]
    with store.begin() as conn:
        ids = dict(
            conn.execute(
                select(runs.c.run_digest, runs.c.id).where(runs.c.run_digest.in_([clean_run, shaky_run]))
            ).all()
        )
        key = conn.scalar(select(runs.c.comparison_key).where(runs.c.run_digest == clean_run))
        group = rank_group([r for r in rank_inputs(conn, [key]) if r.run_id in ids.values()])
    assert [e.run.run_id for e in group.entries] == [ids[clean_run]]
    assert group.entries[0].interval is not None  # the harness's raw samples give the bootstrap interval
    assert group.exclusion(ids[shaky_run]).reasons == (FLAGGED,)


def test_an_unsandboxed_run_is_stored_as_reproducible_and_says_why(store):
    from kernelindex.ingest.evaluations import store_evaluation
    from kernelindex.ranking.evidence_facts import evidence_for_runs

    suite = evaluate(
        problem("vector_add"),
        solution("vector_add_torch"),
        quick(sandbox="off", cases=["3a1f0e2c-0000-4000-8000-000000000001"]),
    )
    assert suite.cases[0].passed and not suite.sandboxed
    records = evaluation_records(suite)
    assert records.source[0] == "kernelindex-harness-unsandboxed"
    with store.begin() as conn:
        stored = store_evaluation(conn, records)
    with store.begin() as conn:
        levels = evidence_for_runs(conn, list(stored.run_ids))
    assert {e.level for e in levels.values()} == {"reproducible"}
    log = next(a for a in records.artifacts if a.digest == records.case_runs[0]["spec"]["evidence"]["logs"]["digest"])
    assert b"sandbox: none (sandbox switched off" in log.content and b"reproducible, not verified" in log.content
