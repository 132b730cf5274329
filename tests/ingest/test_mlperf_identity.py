"""One model and one workload whichever way MLPerf results arrive: upstream's own summary rows
(`import --from mlperf`) make the very records the public serving export holds, so README's serving
URLs keep answering after both are imported."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.store.database import open_store
from kernelindex.web.app import create_app


@pytest.fixture(scope="module")
def both(tmp_path_factory, shared_dir) -> str:
    """A store holding the serving export, then upstream's summary snapshots imported over it."""
    data = shared_dir / "data"
    exports = sorted(data.glob("kernelindex-serving-slice-*.jsonl.zst"))
    snapshots = sorted((data / "upstream-fixtures" / "mlperf").glob("summary-*.json"))
    if not exports or not snapshots:
        pytest.skip(f"no serving export or MLPerf snapshots under {data}")
    db = str(tmp_path_factory.mktemp("mlperf-identity") / "s.db")
    for args in ([str(exports[-1])], ["--from", "mlperf", *map(str, snapshots)]):
        result = CliRunner().invoke(app, ["import", *args, "--db", db, "--json"])
        assert result.exit_code == 0, result.output
    return db


def _rows(db: str, table: str) -> list[dict]:
    from sqlalchemy import text

    store = open_store(db)
    try:
        with store.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(text(f"SELECT slug, name FROM {table}"))]
    finally:
        store.close()


@pytest.mark.parametrize("table", ["model_revisions", "serving_workloads"])
def test_no_two_records_share_a_slug(both, table):
    rows = _rows(both, table)
    slugs = [r["slug"] for r in rows]
    assert rows and len(slugs) == len(set(slugs)), sorted(s for s in slugs if slugs.count(s) > 1)


def test_upstream_rows_name_the_exports_models(both):
    names = {r["name"] for r in _rows(both, "model_revisions")}
    assert "Llama-2-70B (MLPerf reference)" in names and "llama2-70b (MLPerf reference)" not in names


def test_readmes_serving_urls_answer(both):
    store = open_store(both)
    try:
        client = TestClient(create_app(store=store))
        resolved = client.get("/api/v1/resolve/serving", params={"model": "llama2-70b", "gpu": "H200"})
        assert resolved.status_code == 200, resolved.text[:500]
        assert client.get("/models/mlperf-llama2-70b").status_code == 200
    finally:
        store.close()


def test_a_model_outside_the_reference_table_keeps_upstream_s_name():
    from kernelindex.ingest.upstream.mlperf import model_spec, workload_spec

    assert model_spec("llama4-400b") == {"model": "llama4-400b (MLPerf reference)"}
    assert workload_spec("llama4-400b", "Server") == {
        "streaming": True,
        "loadGeneration": "open_loop",
        "arrival": "poisson",
    }
    limits = [(s["metric"], s["value"]) for s in workload_spec("llama2-70b", "Interactive")["slo"]]
    assert limits == [("ttft_ms", 450), ("tpot_ms", 40)] and "slo" not in workload_spec("llama2-70b", "Offline")
