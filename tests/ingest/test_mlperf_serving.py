"""MLPerf Inference rows stored as serving runs: counted, with provenance and upstream's ids, shown on
the site where serving runs show, idempotent on re-import, and a bad row refused by file, line and
field with nothing stored. On a small hand-made summary file (fresh random values each run) and on
the real snapshots in ../shared/data/upstream-fixtures/mlperf."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from ingest_kit import snapshot
from sqlalchemy import select

from kernelindex.ingest.problems import ImportFailed
from kernelindex.ingest.upstream import dispatch
from kernelindex.store import tables as t
from kernelindex.store.serving import tables as st
from kernelindex.web.app import create_app


def summary_row(rng: random.Random, number: int, **changes) -> dict:
    """One ``summary_results.json`` row in upstream's shape (closed, datacenter, an LLM, tokens/s)."""
    nodes = rng.choice([1, 1, 2])
    row = {
        "ID": f"9.9-{number:04d}",
        "Submitter": rng.choice(["Acme", "Globex"]),
        "Availability": "available",
        "Category": "closed",
        "Suite": "datacenter",
        "System": f"Test System {number}",
        "Model": rng.choice(["llama2-70b-99", "llama2-70b-99.9", "mixtral-8x7b"]),
        "Scenario": rng.choice(["Offline", "Server", "Interactive"]),
        "Nodes": nodes,
        "Accelerator": f"NVIDIA H200-SXM-141GB (x{8 * nodes})",
        "a#": 8,
        "Total Accelerators": 8 * nodes,
        "Software": "TensorRT 10.9, CUDA 12.8",
        "errors": 0,
        "version": "v9.9",
        "weight_data_types": "fp8",
        "Details": f"https://example.org/results/{number}",
        "Performance_Result": round(rng.uniform(1000, 90000), 2),
        "Performance_Units": "Tokens/s",
    }
    return row | changes


def write_summary(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps(rows, indent=2))  # one key per line: rows start on known lines
    return path


def made_up(tmp_path: Path) -> tuple[Path, list[dict], int]:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    rows = [summary_row(rng, n) for n in range(1, rng.randint(3, 6))]
    rows.append(summary_row(rng, 90, Category="open"))  # counted and skipped
    rows.append(summary_row(rng, 91, Model="resnet50", Performance_Units="Samples/s"))
    return write_summary(tmp_path / "summary.json", rows), rows, seed


def _stored_runs(store) -> list[dict]:
    with store.begin() as conn:
        return [dict(r._mapping) for r in conn.execute(select(st.serving_runs))]


def test_made_up_rows_become_serving_runs_with_provenance_and_show_on_the_site(store, tmp_path):
    path, rows, seed = made_up(tmp_path)
    kept = [r for r in rows if r["Category"] == "closed" and r["Performance_Units"] == "Tokens/s"]
    report = dispatch.import_upstream(store, "mlperf", path)
    assert report.added["serving_runs"] == len(kept) == report.added["serving_measurements"], seed
    assert report.upstream_skipped == {"open division": 1, "not an LLM": 1}, seed
    with store.begin() as conn:
        source_id, policy = conn.execute(
            select(t.sources.c.id, t.sources.c.policy).where(t.sources.c.slug == "mlperf-inference")
        ).one()
    assert policy["license"] == "Apache-2.0" and policy["url"].startswith("https://mlcommons.org/")
    runs = _stored_runs(store)
    by_id = {run["manifest"]["spec"]["sourceNative"]["externalId"]: run for run in runs}
    assert set(by_id) == {r["ID"] for r in kept}, seed
    for row in kept:
        run = by_id[row["ID"]]
        spec, labels = run["manifest"]["spec"], run["manifest"]["metadata"]["labels"]
        assert run["source_id"] == source_id
        assert labels["source"] == "mlperf-inference" and labels["license"] == "Apache-2.0"
        assert labels["retrieved_at"].endswith("Z")
        assert spec["measurements"][0]["value"] == row["Performance_Result"], seed
        assert spec["sourceNative"]["benchmark"] == row["Model"]
        assert run["total_accelerators"] == row["Total Accelerators"]
    client = TestClient(create_app(store=store))
    some = by_id[kept[0]["ID"]]
    page = client.get(f"/serving-runs/{some['id']}")
    assert page.status_code == 200 and "H200" in page.text, seed
    api = client.get(f"/api/v1/serving-runs/{some['id']}").json()
    assert json.dumps(api).count(kept[0]["ID"]) >= 1, seed
    models = client.get("/models").text
    assert "(MLPerf reference)" in models


def test_reimport_adds_nothing_and_check_stores_nothing(store, tmp_path):
    path, rows, seed = made_up(tmp_path)
    checked = dispatch.import_upstream(store, "mlperf", path, check=True)
    assert checked.checked_only and checked.added["serving_runs"] > 0, seed
    assert _stored_runs(store) == []
    first = dispatch.import_upstream(store, "mlperf", path)
    before = snapshot(store)
    again = dispatch.import_upstream(store, "mlperf", path)
    assert sum(again.added.values()) == 0, seed
    assert again.present["serving_runs"] == first.added["serving_runs"], seed
    counts, lines = snapshot(store)
    assert lines == before[1], seed  # the export is unchanged
    assert counts.pop("source_refreshes") == before[0].pop("source_refreshes") + 1  # the refresh is noted
    assert counts == before[0], seed


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"Performance_Result": "lots"}, "Performance_Result", "expected"),
        ({"Scenario": "Burst"}, "Scenario", "unknown scenario"),
        ({"Nodes": 1.5}, "Nodes", "expected"),
    ],
)
def test_a_bad_row_is_refused_by_file_line_and_field_with_nothing_stored(store, tmp_path, change, field, words):
    path, rows, seed = made_up(tmp_path)
    bad = random.randrange(len(rows) - 2)  # one of the rows that would be stored
    rows[bad] |= change
    write_summary(path, rows)
    before = snapshot(store)
    with pytest.raises(ImportFailed) as refused:
        dispatch.import_upstream(store, "mlperf", path)
    problem = refused.value.problems[0]
    row_starts = [n for n, text in enumerate(path.read_text().splitlines(), start=1) if text == "  {"]
    assert (problem.file, problem.line, problem.field) == (str(path), row_starts[bad], f"[{bad}].{field}"), seed
    assert words in problem.reason, (seed, problem)
    assert snapshot(store) == before


@pytest.fixture
def mlperf_snapshots(shared_dir) -> Path:
    path = shared_dir / "data" / "upstream-fixtures" / "mlperf"
    if not path.is_dir():
        pytest.skip(f"the MLPerf snapshots {path} are absent")
    return path


def test_the_real_snapshots_store_their_serving_runs_once(store, mlperf_snapshots):
    newer = dispatch.import_upstream(store, "mlperf", mlperf_snapshots / "summary-v6.0-slice.json")
    older = dispatch.import_upstream(store, None, mlperf_snapshots / "summary-v5.1-slice.json")  # detected
    assert (newer.added["serving_runs"], older.added["serving_runs"]) == (9, 4)
    runs = _stored_runs(store)
    assert len(runs) == 13
    assert {run["manifest"]["metadata"]["labels"]["source"] for run in runs} == {"mlperf-inference"}
    assert all(run["manifest"]["metadata"]["sourceRefs"][0]["url"].startswith("https://") for run in runs)
    multi = [r for r in runs if r["manifest"]["spec"]["sourceNative"]["externalId"] == "6.0-0001"]
    assert {r["node_count"] for r in multi} == {11}
    again = dispatch.import_upstream(store, "mlperf", mlperf_snapshots / "summary-v6.0-slice.json")
    assert sum(again.added.values()) == 0 and again.present["serving_runs"] == 9
    client = TestClient(create_app(store=store))
    assert "MI355X" in client.get(f"/serving-runs/{multi[0]['id']}").text
