"""A run the benchmark's own judge passed and our stricter rule refused shows the disagreement on its page
and in its JSON (issue 30): the flag, and each call where the two rules differ."""

from __future__ import annotations

import json
import random
import secrets
import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from kernelindex.formats.problem import load_problem
from kernelindex.formats.solution import load_solution
from kernelindex.harness.records import evaluation_records
from kernelindex.harness.runner import EvalOptions, evaluate
from kernelindex.ingest.evaluations import store_evaluation
from kernelindex.records.canonical import digest
from kernelindex.records.vocabulary import STRICT_RULE_FLAG
from kernelindex.store import open_store
from kernelindex.web.app import create_app

VECTOR_ADD = Path(__file__).resolve().parents[1] / "harness" / "fixtures" / "problems" / "vector_add"
FIRST = "3a1f0e2c-0000-4000-8000-000000000001"


def test_the_strict_rules_disagreement_is_on_the_run_page_and_in_its_json(tmp_path):
    upstream = tmp_path / "vector_add_upstream"  # read as SOL-ExecBench's: its matched-ratio rule judges
    shutil.copytree(VECTOR_ADD, upstream)
    definition = json.loads((upstream / "definition.json").read_text())
    definition.pop("kernelindex_judge", None)
    (upstream / "definition.json").write_text(json.dumps(definition))
    stride = random.Random(secrets.randbits(64)).choice([128, 150, 200])  # under 1% of the outputs
    code = f"import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n    z.view(-1)[::{stride}] = 1e30\n"
    doc = {
        "name": "add_with_outliers",
        "definition": definition["name"],
        "author": "kernelindex tests",
        "spec": {"languages": ["pytorch"], "target_hardware": ["cpu"], "entry_point": "solution.py::run"},
        "sources": [{"path": "solution.py", "content": code}],
    }
    (tmp_path / "solution.json").write_text(json.dumps(doc))
    options = EvalOptions(rounds=3, warmup=2, iterations=8, pairs=4, timeout_s=90, cases=[FIRST])
    suite = evaluate(load_problem(upstream), load_solution(tmp_path / "solution.json"), options)
    (result,) = suite.cases
    assert result.passed and STRICT_RULE_FLAG in result.flags and result.disagreements
    records = evaluation_records(suite)
    store = open_store(str(tmp_path / "ki.db"))
    with store.begin() as conn:
        stored = store_evaluation(conn, records)
    case_id = stored.run_ids[digest(records.case_runs[0])]
    suite_id = stored.run_ids[digest(records.suite_run)]
    with TestClient(create_app(store=store)) as client:
        shown = client.get(f"/api/v1/runs/{case_id}").json()["strictRule"]
        assert shown == {"flag": STRICT_RULE_FLAG, "flagged": True, "disagreements": result.disagreements}
        of_suite = client.get(f"/api/v1/runs/{suite_id}").json()["strictRule"]
        assert of_suite["flagged"] and of_suite["disagreements"] == [f"{FIRST[:8]} {d}" for d in result.disagreements]
        page = client.get(f"/runs/{case_id}")
        assert page.status_code == 200
        section = page.text.split('data-field="strict-rule"', 1)[1].split("</ul>", 1)[0]
        assert STRICT_RULE_FLAG in section and "the benchmark's verdict stands" in section
        assert "the benchmark&#39;s rule passes it" in section  # each disagreement, escaped as text
    store.close()
