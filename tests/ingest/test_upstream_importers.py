"""Upstream importers on the real snapshots in ../shared/data/upstream-fixtures, and on bad variants.

Every snapshot imports with provenance on every record (labels source/retrieved_at/license and a
source URL) and upstream's ids in ``sourceNative``; re-importing adds nothing. A truncated file, a
renamed field, a changed type or an unknown status is refused naming file, line and field, with
the store unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
from pathlib import Path

import pytest
from ingest_kit import snapshot
from sqlalchemy import select
from typer.testing import CliRunner

from hostile_kit import SEED, hostile_edit_file
from kernelindex.cli import app
from kernelindex.ingest.problems import ImportFailed
from kernelindex.ingest.upstream import dispatch, mlperf
from kernelindex.ingest.upstream.dispatch import detect
from kernelindex.records.models import parse_record
from kernelindex.store import tables as t


def import_upstream(store, source, path, **options):
    """The CLI's call: the harness's problem reader passed in for FlashInfer-Bench folders."""
    return dispatch.import_upstream(store, source, path, **options)


# source -> (snapshot path under upstream-fixtures, runs it stores, the sourceNative source slug)
SNAPSHOTS = {
    "sol-api": ("sol/api", 2, "sol-execbench"),
    "gpumode": ("gpumode/api", 1, "gpumode-kernelbot"),
    "liger": ("liger/all-benchmark-data-slice.csv", 8, "liger-kernel"),
    "flashinfer": ("flashinfer/dataset", 5, "flashinfer-bench"),
}


@pytest.fixture(scope="module")
def fixtures(shared_dir) -> Path:
    path = shared_dir / "data" / "upstream-fixtures"
    if not path.is_dir():
        pytest.skip(f"upstream snapshots {path} are absent")
    return path


def copy_of(fixtures: Path, relative: str, tmp_path: Path) -> Path:
    source = fixtures / relative
    target = tmp_path / source.name
    if source.is_dir():
        shutil.copytree(source, target)
        for p in target.rglob("*"):
            p.chmod(0o644 if p.is_file() else 0o755)
    else:
        shutil.copy(source, target)
        target.chmod(0o644)
    return target


@pytest.mark.parametrize("source", SNAPSHOTS)
def test_each_snapshot_imports_with_provenance_and_upstream_ids(store, fixtures, source):
    relative, runs, slug = SNAPSHOTS[source]
    path = fixtures / relative
    assert detect(path) == source
    report = import_upstream(store, source, path)
    assert report.added["runs"] == runs
    with store.begin() as conn:
        stored_source = conn.execute(select(t.sources).where(t.sources.c.slug == slug)).mappings().one()
        manifests = [m for (m,) in conn.execute(select(t.runs.c.manifest))]
        parents = [
            m
            for table in (t.operations, t.workloads, t.implementations)
            for (m,) in conn.execute(select(table.c.manifest))
        ]
    assert stored_source["policy"]["license"] and stored_source["policy"]["url"].startswith("https://")
    assert len(manifests) == runs
    for record in [r for bundle in manifests for r in bundle.values()] + parents:
        parse_record(record)
        labels = record["metadata"]["labels"]
        assert labels["source"] == slug and labels["retrieved_at"].endswith("Z") and labels["license"]
        assert record["metadata"]["sourceRefs"][0]["url"].startswith("https://")
    for bundle in manifests:
        native = bundle["run"]["spec"]["sourceNative"]
        assert native["source"] == slug and native["externalId"]
    assert sum(import_upstream(store, source, path).added.values()) == 0  # idempotent


def test_sol_records_match_the_public_catalogs_protocol(store, fixtures):
    """The SOL leaderboard protocol hashes to the one the public export carries for SOL runs."""
    import_upstream(store, "sol-api", fixtures / "sol/api")
    with store.begin() as conn:
        keys = set(conn.scalars(select(t.runs.c.protocol_key)))
    assert keys == {"sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"}


def test_gpumode_keeps_each_users_best_ranked_run(store, fixtures):
    report = import_upstream(store, "gpumode", fixtures / "gpumode/api")
    assert report.upstream_skipped == {"not the user's best ranked run on the board": 1}
    with store.begin() as conn:
        (native,) = [m["run"]["spec"]["sourceNative"] for (m,) in conn.execute(select(t.runs.c.manifest))]
    rows = json.loads((fixtures / "gpumode/api/fp8-mm-top.json").read_text())["rows"]
    best = min(rows, key=lambda r: r["row"]["run_score"])["row"]
    assert native["externalId"] == f"submission/{best['submission_id']}"
    assert native["metrics"]["leaderboard_score_s"] == best["run_score"]


def test_mlperf_rows_parse_into_serving_records_only(fixtures):
    parsed = mlperf.read(fixtures / "mlperf/summary-v6.0-slice.json")
    assert len(parsed.runs) == 9
    assert parsed.skipped == {"open division": 1, "not a datacenter result": 1, "not an LLM": 2}
    multi = next(run for rid, run in parsed.runs if rid == "6.0-0001")["spec"]["topology"]
    assert multi == {
        "acceleratorVendor": "amd",
        "acceleratorModel": "AMD Instinct MI355X 288GB HBM3e",
        "acceleratorsPerNode": 8,
        "nodeCount": 11,
    }
    for rec in [
        *parsed.models.values(),
        *parsed.configurations.values(),
        *parsed.workloads.values(),
        *parsed.stacks.values(),
        *(r for _, r in parsed.runs),
    ]:
        parse_record(rec)
        assert rec["metadata"]["labels"]["source"] == "mlperf-inference"
    older = mlperf.read(fixtures / "mlperf/summary-v5.1-slice.json")
    assert len(older.runs) == 4 and all(r["spec"]["observedAt"].startswith("2025-09") for _, r in older.runs)


def _edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])


def _sol_rename(d):
    d["data"]["submissions"][1]["kernel_identifier"] = d["data"]["submissions"][1].pop("kernel_id")


def _sol_type(d):
    d["data"]["submissions"][0]["latency_ms"] = "0.05 ms"


def _sol_status(d):
    d["data"]["submissions"][1]["status"] = "EXPLODED"


def _gm_rename(d):
    d["rows"][0]["row"]["passed"] = d["rows"][0]["row"].pop("run_passed")


def _gm_type(d):
    d["rows"][1]["row"]["run_score"] = "fast"


def _gm_status(d):
    d["rows"][0]["row"]["run_passed"] = "maybe"


def _fi_status(path: Path) -> None:
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"PASSED"', '"EXPLODED"')
    path.write_text("\n".join(lines) + "\n")


def _fi_type(path: Path) -> None:
    lines = path.read_text().splitlines()
    doc = json.loads(lines[2])
    doc["evaluation"]["performance"]["latency_ms"] = "fast"
    lines[2] = json.dumps(doc)
    path.write_text("\n".join(lines) + "\n")


def _fi_rename(path: Path) -> None:
    lines = path.read_text().splitlines()
    doc = json.loads(lines[0])
    doc["evaluations"] = doc.pop("evaluation")
    lines[0] = json.dumps(doc)
    path.write_text("\n".join(lines) + "\n")


def _fi_line(number: int, change):
    """Change trace line ``number`` (1-based) of a trace file."""

    def edit(path: Path) -> None:
        lines = path.read_text().splitlines()
        doc = json.loads(lines[number - 1])
        change(doc)
        lines[number - 1] = json.dumps(doc)
        path.write_text("\n".join(lines) + "\n")

    return edit


def _liger(old: str, new: str):
    def change(path: Path) -> None:
        path.write_text(path.read_text().replace(old, new, 1))

    return change


# (source, snapshot, file to break inside it, how, expected (line, field) of the first problem, words)
SOL, GM, FI, LIGER, ML = (
    "sol/api",
    "gpumode/api",
    "flashinfer/dataset",
    "liger/all-benchmark-data-slice.csv",
    "mlperf/summary-v6.0-slice.json",
)
SUBS, TOP, TRACE = "submissions.json", "fp8-mm-top.json", "trace.jsonl"


def _json(change):
    return lambda path: _edit_json(path, change)


BAD = [
    ("sol-api", SOL, SUBS, _truncate, (None, None), "truncated"),
    ("sol-api", SOL, SUBS, _json(_sol_rename), (None, "data.submissions[1].kernel_id"), "missing"),
    ("sol-api", SOL, SUBS, _json(_sol_type), (None, "data.submissions[0].latency_ms"), "expected"),
    ("sol-api", SOL, SUBS, _json(_sol_status), (None, "data.submissions[1].status"), "EXPLODED"),
    ("gpumode", GM, TOP, _truncate, (None, None), "truncated"),
    ("gpumode", GM, TOP, _json(_gm_rename), (None, "rows[0].row.run_passed"), "missing"),
    ("gpumode", GM, TOP, _json(_gm_type), (None, "rows[1].row.run_score"), "expected"),
    ("gpumode", GM, TOP, _json(_gm_status), (None, "rows[0].row.run_passed"), "true or false"),
    ("flashinfer", FI, TRACE, _truncate, (3, None), "truncated"),
    ("flashinfer", FI, TRACE, _fi_rename, (1, "evaluation"), "missing"),
    ("flashinfer", FI, TRACE, _fi_type, (3, "evaluation.performance.latency_ms"), "number"),
    ("flashinfer", FI, TRACE, _fi_status, (2, "evaluation.status"), "EXPLODED"),
    (
        "flashinfer",
        FI,
        TRACE,
        _fi_line(2, lambda d: d["evaluation"].update(performance="2026-13-45")),
        (2, "evaluation.performance"),
        "must be an object",
    ),
    (
        "flashinfer",
        FI,
        TRACE,
        _fi_line(1, lambda d: d["evaluation"].update(correctness=[1, [2]])),
        (1, "evaluation.correctness"),
        "must be an object",
    ),
    (
        "flashinfer",
        FI,
        TRACE,
        _fi_line(2, lambda d: d["evaluation"]["performance"].update(latency_ms=1e308)),
        (2, "evaluation.performance.latency_ms"),
        "past any real latency",
    ),
    ("flashinfer", FI, TRACE, _fi_line(2, lambda d: d.update(solution={"a": {}})), (2, "solution"), "a name"),
    ("flashinfer", FI, "solution.json", _json(lambda d: d.update(author={"a": {}})), (None, "author"), "string"),
    (
        "flashinfer",
        FI,
        "solution.json",
        _json(lambda d: d["spec"]["target_hardware"].append("x" * 500)),
        (None, "spec.target_hardware"),
        "at most 100",
    ),
    (
        "flashinfer",
        FI,
        "definition.json",
        _json(lambda d: next(iter(d["inputs"].values())).update(dtype=[1, [2]])),
        (None, f"inputs.{'hidden_states'}.dtype"),
        "unknown dtype",
    ),
    ("liger", LIGER, None, _truncate, (7, None), "columns"),
    ("liger", LIGER, None, _liger("0.019999999552965164", "inf"), (3, "y_value_50"), "non-negative number"),
    ("liger", LIGER, None, _liger("0.018624000251293182", "1e999"), (3, "y_value_20"), "non-negative number"),
    ("liger", LIGER, None, _liger("0.02160000056028366", "1e305"), (3, "y_value_80"), "past any real latency"),
    (
        "gpumode",
        GM,
        "leaderboards.json",
        _json(lambda d: d["rows"][0]["row"].pop("name")),
        (None, "rows[0].row.name"),
        "missing",
    ),
    (
        "gpumode",
        GM,
        TOP,
        _json(lambda d: d["rows"][0]["row"].update(run_system_info=3.5)),
        (None, "rows[0].row.run_system_info"),
        "must be an object",
    ),
    (
        "gpumode",
        GM,
        "leaderboards.json",
        _json(lambda d: d["rows"][0]["row"].update(gpu_types={"B200": 1})),
        (None, "rows[0].row.gpu_types"),
        "list of GPU names",
    ),
    (
        "sol-api",
        SOL,
        SUBS,
        _json(lambda d: d["data"]["submissions"][0].update(latency_ms=1e306)),
        (None, "data.submissions[0].latency_ms"),
        "no latency",
    ),
    ("liger", LIGER, None, _liger("y_value_50", "p50"), (1, "y_value_50"), "header"),
    ("liger", LIGER, None, _liger("0.019999999552965164", "fast"), (3, "y_value_50"), "number"),
    ("liger", LIGER, None, _liger(",memory,", ",throughput,"), (9, "metric_name"), "unknown metric"),
    (
        "liger",
        LIGER,
        None,
        _liger('""M"": 2048,', '""M"": 2048, ""M"": 4096,'),
        (2, "extra_benchmark_config_str"),
        "duplicate key 'M'",
    ),
    ("mlperf", ML, None, _truncate, (None, None), "truncated"),
    ("mlperf", ML, None, _json(lambda d: d[2].pop("Nodes")), (None, "[2].Nodes"), "missing"),
    (
        "mlperf",
        ML,
        None,
        _json(lambda d: d[0].update(Performance_Result="lots")),
        (None, "[0].Performance_Result"),
        "expected",
    ),
    ("mlperf", ML, None, _json(lambda d: d[1].update(Scenario="Burst")), (None, "[1].Scenario"), "unknown scenario"),
]


@pytest.mark.parametrize(
    ("source", "relative", "inner", "breaks", "where", "words"), BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)]
)
def test_bad_variants_are_refused_by_file_line_field_and_store_nothing(
    store, fixtures, tmp_path, source, relative, inner, breaks, where, words
):
    path = copy_of(fixtures, relative, tmp_path)
    broken = path / inner if inner else path
    breaks(broken)
    before = snapshot(store)
    with pytest.raises(ImportFailed) as refused:
        import_upstream(store, source, path)
    problem = refused.value.problems[0]
    assert problem.file == str(broken), problem
    line, field = where
    if line is not None:
        assert problem.line == line, problem
    assert problem.field == field, problem
    assert words in str(problem), problem
    assert snapshot(store) == before


def test_cli_import_from_exits_1_with_the_message_and_0_when_good(fixtures, tmp_path):
    db = str(tmp_path / "u.db")
    path = copy_of(fixtures, "sol/api", tmp_path)
    _edit_json(path / "submissions.json", _sol_status)
    runner = CliRunner()
    refused = runner.invoke(app, ["import", "--from", "sol-api", str(path), "--db", db])
    assert refused.exit_code == 1
    assert "submissions.json: data.submissions[1].status: unknown submission status" in refused.stderr
    liger_csv = str(fixtures / "liger/all-benchmark-data-slice.csv")
    dry = runner.invoke(app, ["import", "--from", "liger", liger_csv, "--db", db, "--check", "--json"])
    assert dry.exit_code == 0 and json.loads(dry.stdout)[0]["checkedOnly"] is True
    assert json.loads(dry.stdout)[0]["added"]["runs"] == 8
    assert json.loads(runner.invoke(app, ["stats", "--db", db, "--json"]).stdout)["tables"]["runs"] == 0
    good = runner.invoke(app, ["import", "--from", "auto", liger_csv, "--db", db, "--json"])
    assert good.exit_code == 0, good.stderr
    assert json.loads(good.stdout)[0]["upstreamRowsSkipped"] == {"memory rows (not a latency)": 1}
    serving = runner.invoke(
        app, ["import", "--from", "mlperf", str(fixtures / "mlperf/summary-v5.1-slice.json"), "--db", db, "--json"]
    )
    assert serving.exit_code == 0, serving.stderr
    assert json.loads(serving.stdout)[0]["added"]["serving_runs"] == 4


def test_every_snapshot_shows_on_the_site_with_its_last_refresh(fixtures, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from kernelindex.store import open_store
    from kernelindex.web.app import create_app

    monkeypatch.setenv("KERNELINDEX_EXPORT_CACHE", str(tmp_path / "exports"))
    store = open_store(f"sqlite:///{tmp_path / 'site.db'}")
    for source, (relative, _, _) in SNAPSHOTS.items():
        import_upstream(store, source, fixtures / relative)
    client = TestClient(create_app(store=store))
    listed = {s["slug"]: s for s in client.get("/api/v1/sources").json()["items"]}
    for _, runs, slug in SNAPSHOTS.values():
        assert listed[slug]["runCount"] == runs and listed[slug]["lastRefreshedAt"].endswith("Z")
        page = client.get(f"/sources/{slug}")
        assert page.status_code == 200 and "Imported here" in page.text and "Data as of" in page.text
        assert listed[slug]["lastRefreshedAt"] in page.text and listed[slug]["name"] in page.text
    store.close()


def _with_a_refused_last_run(records):
    """``records`` plus, after its good runs, a copy of its last run whose protocol no longer matches
    the digest the run names: refused when stored, after the good runs were written."""
    import copy

    line, bundle = records.runs[-1]
    bad = copy.deepcopy(bundle)
    bad["protocol"]["spec"]["warmupIterations"] = bad["protocol"]["spec"].get("warmupIterations", 0) + 1
    records.runs.append((line + 1, bad))
    return records


def test_a_refused_run_after_stored_ones_leaves_nothing_of_the_path(store, fixtures):
    from kernelindex.ingest.upstream import liger
    from kernelindex.ingest.upstream.common import store_records

    path = fixtures / SNAPSHOTS["liger"][0]
    records = _with_a_refused_last_run(liger.read(path))
    before = snapshot(store)
    with pytest.raises(ImportFailed) as refused:
        store_records(store, records, str(path))
    assert refused.value.problems[0].line == records.runs[-1][0]
    assert snapshot(store) == before


def test_an_upstream_import_joins_the_callers_transaction(store, fixtures):
    """Inside a use case's transaction the import commits with it, or not at all; a refused path
    takes back only its own rows."""
    from kernelindex.ingest.upstream import liger
    from kernelindex.ingest.upstream.common import store_records
    from kernelindex.store.database import JoinedStore

    path = fixtures / SNAPSHOTS["liger"][0]
    before = snapshot(store)
    with pytest.raises(RuntimeError, match="use case failed"), store.begin() as conn:
        report = import_upstream(JoinedStore(conn), "liger", path)
        assert report.added["runs"] == SNAPSHOTS["liger"][1]
        raise RuntimeError("use case failed after the import")
    assert snapshot(store) == before

    with store.begin() as conn:
        joined = JoinedStore(conn)
        import_upstream(joined, "sol-api", fixtures / SNAPSHOTS["sol-api"][0])
        with pytest.raises(ImportFailed):
            store_records(joined, _with_a_refused_last_run(liger.read(path)), str(path))
    with store.begin() as conn:
        sources = set(conn.scalars(select(t.sources.c.slug)))
    assert "sol-execbench" in sources and "liger-kernel" not in sources


@pytest.mark.parametrize("source", [*SNAPSHOTS, "mlperf"])
def test_a_snapshot_past_the_whole_file_limit_is_refused_by_name(store, fixtures, tmp_path, monkeypatch, source):
    """Upstream files are read whole: past the limit each is refused naming it, not read into memory."""
    from kernelindex.ingest import whole_files

    relative = SNAPSHOTS[source][0] if source in SNAPSHOTS else "mlperf/summary-v5.1-slice.json"
    path = copy_of(fixtures, relative, tmp_path)
    monkeypatch.setattr(whole_files, "MAX_WHOLE_FILE", 64)
    before = snapshot(store)
    with pytest.raises(ImportFailed) as refused:
        import_upstream(store, source, path)
    problem = refused.value.problems[0]
    assert "more than 64 bytes" in problem.reason and Path(problem.file).is_relative_to(path), problem
    assert snapshot(store) == before


CSV_HOSTILE = ["", "x" * 5000, "nan", "inf", "-1", "1e999", "1e305", "\x00", "a,b", '"', "2026-99-99", "{}"]


def _hostile_snapshot_edit(path: Path, rng: random.Random) -> str:
    """One seeded hostile change to a random file of a snapshot (a CSV cell, a JSON value, a trace
    line's value); what was done, for the message."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl"))
    target = rng.choice(files)
    if target.suffix == ".csv":
        rows = list(csv.reader(io.StringIO(target.read_text())))
        row = rng.randrange(1, len(rows))
        column = rng.randrange(len(rows[row]))
        rows[row][column] = rng.choice(CSV_HOSTILE)
        out = io.StringIO()
        csv.writer(out).writerows(rows)
        target.write_text(out.getvalue())
        return f"{target.name} row {row} column {column} = {rows[row][column][:30]!r}"
    return hostile_edit_file(target, rng)


@pytest.mark.parametrize("source", [*SNAPSHOTS, "mlperf"])
def test_any_hostile_value_in_a_snapshot_is_imported_or_refused_by_file(fixtures, tmp_path, source):
    """Seeded property: a hostile value at a random place of a random file of the snapshot; `kernelindex
    import --from` either imports it or exits 1 with errors that each name a file of the snapshot,
    the store as it was; never a traceback."""
    from kernelindex.store import open_store

    rng = random.Random(f"{SEED}-{source}")
    print(f"hostile snapshot seed: {SEED} (set KERNELINDEX_TEST_SEED to repeat)")
    relative = SNAPSHOTS[source][0] if source in SNAPSHOTS else "mlperf/summary-v5.1-slice.json"
    db = str(tmp_path / "u.db")
    store = open_store(f"sqlite:///{db}")
    try:
        for attempt in range(8):
            (tmp_path / str(attempt)).mkdir()
            path = copy_of(fixtures, relative, tmp_path / str(attempt))
            where = f"{_hostile_snapshot_edit(path, rng)} (seed {SEED})"
            before = snapshot(store)
            result = CliRunner().invoke(app, ["import", "--from", source, str(path), "--db", db])
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                f"{where}: {result.exception!r}"
            )
            assert result.exit_code in (0, 1), f"{where}: {result.output}"
            if result.exit_code == 1:
                errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
                assert errors and all(e.startswith(f"error: {path}") for e in errors), f"{where}: {result.stderr}"
                assert snapshot(store) == before, where
    finally:
        store.close()


def test_flashinfer_workload_traces_are_cases_not_runs(store, fixtures, tmp_path):
    """FlashInfer-Bench's workloads/ files hold workload traces (no solution, no evaluation: its
    ``Trace.is_workload_trace``): each is a case of its definition, and none a run; one naming a definition
    the folder lacks is refused by file and line."""
    import uuid

    folder = copy_of(fixtures, "flashinfer/dataset", tmp_path)
    rng = random.Random(SEED)
    sizes = rng.sample(range(1000, 5000), 3)  # batch sizes none of the fixture's traces measured
    inputs = {name: {"type": "random"} for name in ("hidden_states", "residual", "weight")}
    lines = [
        {
            "definition": "fused_add_rmsnorm_h2048",
            "solution": None,
            "workload": {"uuid": str(uuid.UUID(int=rng.getrandbits(128))), "axes": {"batch_size": n}, "inputs": inputs},
            "evaluation": None,
        }
        for n in sizes
    ]
    (folder / "workloads").mkdir()
    workloads = folder / "workloads" / "fused_add_rmsnorm_h2048.jsonl"
    workloads.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = import_upstream(store, "flashinfer", folder)
    assert report.added["runs"] == SNAPSHOTS["flashinfer"][1]
    with store.begin() as conn:
        axes = [
            m["spec"]["axes"] for (m,) in conn.execute(select(t.workloads.c.manifest)) if m["kind"] == "WorkloadCase"
        ]
    assert {a["batch_size"] for a in axes} >= set(sizes)
    lines.append({**lines[0], "definition": "no_such_op"})
    workloads.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ImportFailed) as refused:
        import_upstream(store, "flashinfer", folder)
    assert str(workloads) in str(refused.value) and ":4" in str(refused.value) and "no_such_op" in str(refused.value)
