"""Every use case is one transaction: a process killed between its steps leaves all or nothing.

Each case runs the use case in a child process that dies (``os._exit``, no cleanup, no rollback
code of ours) right after one of its steps, then checks the store holds exactly what it held
before; then runs it to the end and checks everything is there.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import func, select

from catalog_kit import catalog_lines, write_catalog
from kernelindex.formats.problem import load_problem
from kernelindex.formats.solution import load_solution
from kernelindex.harness.runner import EvalOptions, evaluate
from kernelindex.records.signing import new_private_key, private_key_from_pem, private_key_to_pem
from kernelindex.services.keys import create_api_key
from kernelindex.store import open_store
from kernelindex.store.evidence.tables import api_keys, attestations, correction_requests, signatures
from kernelindex.store.tables import metadata, record_events, runs

HARNESS_FIXTURES = Path(__file__).resolve().parents[1] / "harness" / "fixtures"
KILLED = 9

PRELUDE = """
import os, pickle, sys
from pathlib import Path
from kernelindex.records.signing import private_key_from_pem
from kernelindex.store import open_store

store = open_store(sys.argv[1])
key = private_key_from_pem(Path(sys.argv[2]).read_bytes())


def die_after(module, name):
    '''Kill the process (no cleanup, no rollback of ours) as the first call of module.name returns.'''
    real = getattr(module, name)

    def step(*args, **kwargs):
        real(*args, **kwargs)
        os._exit(9)

    setattr(module, name, step)
"""


def counts(db: str) -> dict[str, int]:
    """Rows in every table, so "nothing changed" is checked everywhere at once."""
    store = open_store(db)
    try:
        with store.engine.connect() as conn:
            return {
                name: conn.scalar(select(func.count()).select_from(table)) or 0
                for name, table in metadata.tables.items()
            }
    finally:
        store.close()


def run_child(db: str, key_file: Path, call: str, kill_after: str | None = None) -> None:
    """Run ``call``; with ``kill_after="module:function"`` in a child that dies as that step returns,
    else here, to the end."""
    if kill_after is None:
        store = open_store(db)
        try:
            exec(
                textwrap.dedent(call),
                {"store": store, "key": private_key_from_pem(key_file.read_bytes()), "pickle": pickle, "Path": Path},
            )
        finally:
            store.close()
        return
    module, name = kill_after.split(":")
    script = PRELUDE + f"import {module} as killed_module\ndie_after(killed_module, {name!r})\n"
    done = subprocess.run(
        [sys.executable, "-c", script + textwrap.dedent(call), db, str(key_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == KILLED, done.stderr


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "uc.db")
    open_store(path).close()
    return path


@pytest.fixture
def key_file(tmp_path) -> Path:
    path = tmp_path / "runner.key"
    path.write_bytes(private_key_to_pem(new_private_key()))
    return path


def _toy_catalog(tmp_path: Path) -> Path:
    return write_catalog(tmp_path / "toy.jsonl.zst", catalog_lines())


def _table(db: str, table, *where):
    store = open_store(db)
    try:
        with store.engine.connect() as conn:
            return conn.execute(select(table).where(*where)).all()
    finally:
        store.close()


def test_import_paths_with_their_leader_events(db, key_file, tmp_path):
    toy = _toy_catalog(tmp_path)
    bundles = sorted((Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "sample").glob("*.json"))
    call = f"""
    from kernelindex.services import imports
    from pathlib import Path
    imports.import_paths(store, [Path({str(toy)!r}), Path({str(bundles[0])!r})])
    """
    before = counts(db)
    # killed after the first file, before the second; then after both files, before the leader events
    for step in ("kernelindex.ingest.paths:import_catalog", "kernelindex.services.imports:import_each"):
        run_child(db, key_file, call, step)
        assert counts(db) == before, step
    run_child(db, key_file, call)
    after = counts(db)
    assert after["runs"] == before["runs"] + 3 and after["record_events"] > before["record_events"]


@pytest.fixture(scope="module")
def suite_file(tmp_path_factory) -> Path:
    """One real (quick) evaluation, pickled for the child processes."""
    suite = evaluate(
        load_problem(HARNESS_FIXTURES / "problems" / "vector_add"),
        load_solution(HARNESS_FIXTURES / "solutions" / "vector_add_torch" / "solution.json"),
        EvalOptions(rounds=1, warmup=1, iterations=3, timeout_s=120),
    )
    path = tmp_path_factory.mktemp("suite") / "suite.pickle"
    path.write_bytes(pickle.dumps(suite))
    return path


def test_record_an_evaluation_with_signatures_and_leader_events(db, key_file, suite_file):
    call = f"""
    from kernelindex.services import evaluations
    suite = pickle.loads(Path({str(suite_file)!r}).read_bytes())
    evaluations.record_evaluation(store, suite, private_key=key)
    """
    before = counts(db)
    # killed after the records are written, before the runner signs them
    run_child(db, key_file, call, "kernelindex.store.evidence.records:sign_stored_record")
    assert counts(db) == before
    # killed after signing and the leader events, before the commit
    run_child(db, key_file, call, "kernelindex.services.evaluations:record_leader_changes")
    assert counts(db) == before
    run_child(db, key_file, call)
    after = counts(db)
    # (leader events only where a run is ranked: a 3-iteration run may be flagged unstable and not ranked)
    assert after["runs"] > 0 and after["signatures"] >= after["runs"]
    assert after["artifacts"] > 0


def test_resolve_a_correction_records_the_leader_change(db, key_file, tmp_path):
    from kernelindex.services.corrections import report_correction
    from kernelindex.services.imports import import_paths

    store = open_store(db)
    import_paths(store, [_toy_catalog(tmp_path)])
    with store.engine.connect() as conn:
        leader = conn.execute(select(runs).order_by(runs.c.primary_value)).first()
    token = create_api_key(store, "tester", frozenset({"report"}), 5)
    _, request_id = report_correction(store, token.token, leader.run_digest[:16], "wrong_value", "timer bug", "retract")
    store.close()
    call = f"""
    from kernelindex.services import corrections
    corrections.resolve_correction(store, {request_id!r}, corrections.Decision.RETRACT, "timer bug")
    """
    before = counts(db)
    for step in ("close_correction_request", "record_leader_changes"):
        run_child(db, key_file, call, f"kernelindex.services.corrections:{step}")
        assert counts(db) == before, step
        assert _table(db, correction_requests)[0].status == "open"
    run_child(db, key_file, call)
    events = _table(db, record_events, record_events.c.comparison_key == leader.comparison_key)
    assert [e.cause for e in events][-2:] == ["retracted", "retraction"]
    assert events[-1].previous_run_id == leader.id and events[-1].run_id != leader.id
    assert _table(db, correction_requests)[0].status == "accepted"


def test_attest_sign_and_api_keys(db, key_file, tmp_path):
    from kernelindex.services.imports import import_paths

    store = open_store(db)
    import_paths(store, [_toy_catalog(tmp_path)])
    with store.engine.connect() as conn:
        digests = list(conn.scalars(select(runs.c.run_digest).order_by(runs.c.seq)))
    store.close()
    cases = [  # (step the child dies after, the use case, the table it adds to)
        (
            "kernelindex.services.attestations:add_attestation",
            f"from kernelindex.services import attestations\nattestations.attest(store, {digests[0][:20]!r}, key, 'me')",
            attestations,
        ),
        (
            "kernelindex.services.signing:sign_stored_record",  # dies after the first of two signatures
            f"from kernelindex.services import signing\nsigning.sign_records(store, {digests!r}, key, 'me')",
            signatures,
        ),
        (
            "kernelindex.services.keys:store_api_key",
            "from kernelindex.services import keys\nkeys.create_api_key(store, 'x', frozenset({'attest'}), 3)",
            api_keys,
        ),
    ]
    for step, call, table in cases:
        before = counts(db)
        run_child(db, key_file, call, step)
        assert counts(db) == before, step
        run_child(db, key_file, call)
        assert len(_table(db, table)) > before[table.name], step
    assert len(_table(db, signatures)) == 1 + len(digests)  # the attestation's own, then one per run


def _unranked_lines() -> list[dict]:
    return [line for line in catalog_lines() if line["table"] != "record_events"]


def _unranked_catalog(db: str, tmp_path: Path) -> None:
    """The toy catalog stored without its leader events (the importer alone records none), so the
    leaders are owed."""
    from kernelindex.ingest.catalog import import_catalog

    store = open_store(db)
    try:
        import_catalog(store, write_catalog(tmp_path / "unranked.jsonl.zst", _unranked_lines()))
    finally:
        store.close()


def test_record_leaders(db, key_file, tmp_path):
    _unranked_catalog(db, tmp_path)
    call = """
    from kernelindex.services import leaders
    leaders.record_leaders(store)
    """
    before = counts(db)
    run_child(db, key_file, call, "kernelindex.services.leaders:record_leader_changes")
    assert counts(db) == before
    run_child(db, key_file, call)
    assert counts(db)["record_events"] > before["record_events"]


def test_upstream_import_with_its_leader_events(db, key_file, tmp_path, shared_dir):
    import shutil

    fixtures = shared_dir / "data" / "upstream-fixtures"
    if not fixtures.is_dir():
        pytest.skip(f"upstream snapshots {fixtures} are absent")
    liger = tmp_path / "liger.csv"
    shutil.copyfile(fixtures / "liger" / "all-benchmark-data-slice.csv", liger)
    gpumode = shutil.copytree(fixtures / "gpumode" / "api", tmp_path / "gpumode")
    call = f"""
    from kernelindex.services import imports
    from pathlib import Path
    imports.import_upstream_paths(store, None, [Path({str(liger)!r}), Path({str(gpumode)!r})])
    """
    before = counts(db)
    # killed after the first path, before the second; then after both, before the leader events
    for step in ("kernelindex.services.imports:import_upstream", "kernelindex.services.imports:record_leader_changes"):
        run_child(db, key_file, call, step)
        assert counts(db) == before, step
    run_child(db, key_file, call)
    after = counts(db)
    assert after["runs"] == before["runs"] + 9 and after["record_events"] > before["record_events"]


def test_sync_with_its_leader_events(db, key_file, tmp_path, monkeypatch):
    from kernelindex.ingest.catalog import import_catalog
    from kernelindex.web.app import create_app
    from live_kit import serving

    monkeypatch.setenv("KERNELINDEX_EXPORT_CACHE", str(tmp_path / "exports"))
    origin = open_store(str(tmp_path / "origin.db"))
    # without the catalog's own leader events, so the events in the synced store are the sync's
    import_catalog(origin, write_catalog(tmp_path / "unranked.jsonl.zst", _unranked_lines()))
    try:
        with serving(create_app(store=origin)) as url:
            call = f"""
            from kernelindex.services import sync
            sync.sync_catalog(store, {url!r})
            """
            before = counts(db)
            # killed after the catalog is imported, before the leader events; then after them, before the commit
            for step in ("kernelindex.ingest.sync:import_catalog", "kernelindex.services.sync:record_leader_changes"):
                run_child(db, key_file, call, step)
                assert counts(db) == before, step
            run_child(db, key_file, call)
    finally:
        origin.close()
    after = counts(db)
    assert after["runs"] == before["runs"] + 2 and after["record_events"] > before["record_events"]
