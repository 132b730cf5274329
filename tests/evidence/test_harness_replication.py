"""End to end with the real harness: one problem evaluated by two runners (two keys, two machine
names), each recording and signing its runs, makes the suite run "replicated" on its page.

Both evaluations happen on this machine (CPU); what makes the runners independent for the index
is what it checks: different runner keys with valid signatures and different runner hosts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kernelindex.formats.problem import load_problem
from kernelindex.formats.solution import load_solution
from kernelindex.harness.records import evaluation_records
from kernelindex.harness.runner import EvalOptions, evaluate
from kernelindex.ingest.evaluations import store_evaluation
from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.records.signing import new_private_key
from kernelindex.store.database import open_store
from kernelindex.web.app import create_app

FIXTURES = Path(__file__).resolve().parents[1] / "harness" / "fixtures"


def test_two_harness_runners_make_the_suite_run_replicated(tmp_path):
    problem = FIXTURES / "problems" / "vector_add"
    solution = FIXTURES / "solutions" / "vector_add_torch" / "solution.json"
    if not problem.is_dir() or not solution.is_file():
        pytest.skip("the harness test fixtures (vector_add) are absent")
    options = EvalOptions(rounds=2, warmup=2, iterations=6, pairs=3, timeout_s=120)
    store = open_store(f"sqlite:///{tmp_path / 'harness.db'}")
    stored = []
    for host in ("runner-host-a", "runner-host-b"):
        suite = evaluate(load_problem(problem), load_solution(solution), options)
        assert suite.score.passed, [case.log for case in suite.cases]
        records = evaluation_records(suite)
        records.runner_host = host  # two machines, simulated on one
        with store.begin() as conn:
            stored.append(store_evaluation(conn, records, new_private_key()))
    first, second = (s.suite_run_digest for s in stored)
    assert first != second
    with store.begin() as conn:
        levels = evidence_for_runs(conn, [first, second, *stored[0].case_run_digests])
    assert levels[first].level == levels[second].level == "replicated", (
        levels[first].reasons,
        levels[second].reasons,
        stored,
    )
    assert all(levels[d].level == "replicated" for d in stored[0].case_run_digests)

    with TestClient(create_app(store=store)) as client:
        page = client.get(f"/r/{first}")
        assert page.status_code == 200
        assert 'class="evidence evidence-replicated"' in page.text
        assert "runner-host-a" in page.text and "runner-host-b" in page.text
        assert re.search(r'data-signature="valid">Signed by [^<]*<code', page.text)
    store.close()
