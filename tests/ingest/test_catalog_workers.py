"""A file whose lines are converted by worker processes imports exactly as one converted in-process:
the same rows stored, the same counts, the same refused lines with the same reasons, and nothing
left running after a refusal. Blocks of one line make a small catalog take the worker path."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from ingest_kit import snapshot
from typer.testing import CliRunner

from catalog_kit import catalog_lines, to_text, write_catalog
from kernelindex.cli import app
from kernelindex.ingest import catalog_lines as conversion
from kernelindex.ingest.catalog import MAX_PROBLEMS, BadLines, import_catalog
from kernelindex.ingest.problems import ImportFailed
from kernelindex.ingest.shared_slots import Slots
from kernelindex.records.strict_json import MAX_DEPTH
from kernelindex.store import open_store
from kernelindex.store.database import json_bytes
from kernelindex.store.writer import Writer
from store_fixtures import database_url

SEED = random.randrange(2**32)
WORKER_COUNT = conversion.worker_count


class CountingPool(ProcessPoolExecutor):
    tasks = 0

    def submit(self, *args, **kwargs):
        CountingPool.tasks += 1
        return super().submit(*args, **kwargs)


_OTHERS: set = set()  # child processes other tests in this process left running (not ours to judge)


def _workers_left() -> set:
    """Child processes started since :func:`_convert` that are still alive."""
    return set(multiprocessing.active_children()) - _OTHERS


def _convert(mode: str, monkeypatch) -> None:
    """``workers``: one-line blocks, two worker processes; ``here``: no workers."""
    _OTHERS.clear()
    _OTHERS.update(multiprocessing.active_children())
    monkeypatch.setattr(conversion, "BLOCK", 1)
    monkeypatch.setattr(conversion, "worker_count", (lambda: 2) if mode == "workers" else (lambda: 0))
    monkeypatch.setattr(conversion, "ProcessPoolExecutor", CountingPool)
    CountingPool.tasks = 0


def messy_catalog(rng: random.Random) -> str:
    """The small catalog with unknown columns, a table this store does not model and bad lines
    (malformed JSON, a wrong digest, a wrong shape) at random places after its parents."""
    lines = catalog_lines()
    for line in rng.sample(lines, 4):
        line["row"][f"newColumn{rng.randrange(99)}"] = rng.random()
    lines.insert(rng.randrange(len(lines)), {"table": "future_table", "row": {"x": rng.random()}})
    texts = to_text(lines).splitlines(keepends=True)
    impl = next(i for i, t in enumerate(texts) if '"implementations"' in t)
    wrong = json.loads(texts[impl])
    wrong["row"]["implementationDigest"] = "sha256:" + "0" * 64
    texts[impl] = json.dumps(wrong) + "\n"
    for bad in ('{"table": "sources", "row": \n', '["not", "a", "line"]\n'):
        texts.insert(rng.randrange(3, len(texts) + 1), bad)
    # a second record under the artifact's id, written after the first (a line of another table
    # between them): refused by the writer (not the converter) when a later line of another table
    # makes it write, so its text must still be at hand then
    at = next(i for i, t in enumerate(texts) if '"artifacts"' in t)
    artifact = json.loads(texts[at])
    artifact["row"]["contentDigest"] = "sha256:" + "cd" * 32
    alias = next(t for t in texts if '"operation_aliases"' in t)  # stored already: counted as present
    texts[at + 1 : at + 1] = [alias, json.dumps(artifact) + "\n", alias]
    texts.insert(rng.randrange(len(texts) + 1), "  \n")  # blank: numbered, not read
    return "".join(texts)


def _import(tmp_path, name: str, text: str, policy: BadLines):
    folder = tmp_path / name
    folder.mkdir()
    store = open_store(database_url("sqlite", folder, migrated=True))
    path = write_catalog(folder / "catalog.jsonl.zst", text=text)
    refused: list[tuple] = []
    policy = BadLines(
        skip_invalid=policy.skip_invalid, check=policy.check, on_refused=lambda p, t: refused.append((p, t))
    )
    try:
        report = import_catalog(store, path, bad_lines=policy)
        outcome = (
            report.lines,
            report.added,
            report.present,
            report.skipped,
            report.unknown_columns,
            report.foreign_tables,
            report.source_slugs,
        )
    except ImportFailed as exc:
        outcome = [(p.line, p.field, p.reason) for p in exc.problems]
    refused_lines = [(p.line, p.field, p.reason, line_text) for p, line_text in refused]
    stored = snapshot(store)
    store.close()
    return outcome, refused_lines, stored


class CountingSlots(Slots):
    """Counts the blocks and results that went through shared memory, not the pipe (in this
    process: a worker's own writes are seen by their sizes handed back)."""

    blocks = results = 0

    def put_block(self, slot, block):
        stored = super().put_block(slot, block)
        CountingSlots.blocks += stored
        return stored

    def result(self, slot, size):
        CountingSlots.results += 1
        return super().result(slot, size)


# how blocks and lines travel: all through shared memory, all through the pipe (nothing fits a
# slot), or some each way (lines of the small catalog run from ~100 bytes to a few KB; a slot of
# 600 bytes takes some of them, and a result slot of 3 KB some of what they become)
TRANSPORTS = {"slots": (2 << 20, 4 << 20), "pipe": (0, 0), "mixed": (600, 3000)}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("policy", [BadLines(), BadLines(skip_invalid=True), BadLines(check=True)])
def test_workers_import_what_this_process_imports(tmp_path, monkeypatch, policy, transport):
    rng = random.Random(SEED)
    text = messy_catalog(rng)
    _convert("here", monkeypatch)
    here = _import(tmp_path, "here", text, policy)
    assert CountingPool.tasks == 0
    _convert("workers", monkeypatch)
    monkeypatch.setattr(conversion, "Slots", CountingSlots)
    monkeypatch.setattr(conversion, "SLOT_BLOCK", TRANSPORTS[transport][0])
    monkeypatch.setattr(conversion, "SLOT_RESULT", TRANSPORTS[transport][1])
    CountingSlots.blocks = CountingSlots.results = 0
    workers = _import(tmp_path, "workers", text, policy)
    assert CountingPool.tasks >= 3, f"seed {SEED}: the worker path was not taken"
    if transport == "mixed":
        assert 0 < CountingSlots.blocks < CountingPool.tasks
        assert CountingSlots.results <= CountingSlots.blocks
    else:  # every task (none was stopped early) through the slots, or none
        want = CountingPool.tasks if transport == "slots" else 0
        assert (CountingSlots.blocks, CountingSlots.results) == (want, want)
    assert workers == here, f"seed {SEED}"
    assert _workers_left() == set()
    if policy.skip_invalid:
        assert here[0][3] == 4 and len(here[1]) == 4  # the four bad lines, each refused and reported
        file_lines = text.split("\n")
        for line, _, _, line_text in here[1]:
            assert line_text == file_lines[line - 1], f"seed {SEED}: line {line} reported with another text"


def test_lines_nested_past_what_orjson_writes_import_alike_on_both_paths(tmp_path, monkeypatch):
    """Lines of a table this store does not model, nested deeper than orjson writes (255 levels)
    and up to the limit, are kept; one past the limit is refused as nested too deeply, the same in
    a worker as here (whose stack is shallower). They used to crash the import with a TypeError."""
    depths = [256, 300, MAX_DEPTH, MAX_DEPTH + 1, 1000]
    lines = to_text(catalog_lines()).splitlines(keepends=True)
    for depth in depths:  # the line object is one of the levels, its row the next
        nested = '{"table":"future_table","row":' + '{"a":' * (depth - 2) + "{}" + "}" * (depth - 2) + "}\n"
        lines.insert(random.Random(SEED + depth).randrange(6, len(lines) + 1), nested)
    text = "".join(lines)
    _convert("here", monkeypatch)
    here = _import(tmp_path, "here", text, BadLines(skip_invalid=True))
    _convert("workers", monkeypatch)
    workers = _import(tmp_path, "workers", text, BadLines(skip_invalid=True))
    assert workers == here, f"seed {SEED}"
    assert here[0][5] == {"future_table": 3}  # 256, 300 and MAX_DEPTH levels kept
    assert [reason for _, _, reason, _ in here[1]] == ["malformed JSON: nested too deeply"] * 2


def test_an_import_into_empty_tables_decides_from_memory_what_a_query_would(tmp_path, monkeypatch):
    """An import's writer answers "stored already?" from memory for tables that were empty when it
    came to them; asking the store every time gives the same outcome, refusals included."""
    text = messy_catalog(random.Random(SEED))
    _convert("here", monkeypatch)
    policy = BadLines(skip_invalid=True)
    from_memory = _import(tmp_path, "memory", text, policy)
    monkeypatch.setattr(Writer, "_only_mine", lambda self, table: False)
    asked = _import(tmp_path, "asked", text, policy)
    assert from_memory == asked, f"seed {SEED}"
    assert any("already stored for a different record" in reason for _, _, reason, _ in asked[1])


def test_a_truncated_file_is_refused_whole_by_the_worker_path(tmp_path, monkeypatch):
    _convert("workers", monkeypatch)
    folder = tmp_path / "cut"
    folder.mkdir()
    store = open_store(database_url("sqlite", folder, migrated=True))
    path = write_catalog(folder / "catalog.jsonl.zst", catalog_lines() * 3)
    path.write_bytes(path.read_bytes()[:-7])
    before = snapshot(store)
    with pytest.raises(ImportFailed) as refused:
        import_catalog(store, path)
    assert [p.reason for p in refused.value.problems] == ["truncated zstd file: the last frame ends early"]
    assert snapshot(store) == before
    assert _workers_left() == set()
    store.close()


def test_a_line_that_is_not_utf8_refuses_the_file_from_a_worker(tmp_path, monkeypatch):
    """A worker finds it (this process no longer decodes lines): the refusal crosses back whole, as
    the file's one problem, without breaking the pool (no block is converted here instead)."""
    _convert("workers", monkeypatch)
    parent, real = os.getpid(), conversion.block_lines
    here: list[int] = []

    def counting(first, block):
        if os.getpid() == parent:
            here.append(first)
        return real(first, block)

    monkeypatch.setattr(conversion, "block_lines", counting)
    texts = to_text(catalog_lines() * 2).encode().splitlines(keepends=True)
    bad = random.Random(SEED).randrange(3, len(texts))
    texts[bad] = texts[bad].replace(b'"table"', b'"t\xe9able"', 1)
    folder = tmp_path / "latin"
    folder.mkdir()
    store = open_store(database_url("sqlite", folder, migrated=True))
    path = folder / "catalog.jsonl"
    path.write_bytes(b"".join(texts))
    before = snapshot(store)
    with pytest.raises(ImportFailed) as refused:
        import_catalog(store, path)
    [problem] = refused.value.problems
    assert problem.line == bad + 1 and "not UTF-8 text" in problem.reason, f"seed {SEED}"
    assert here == [], f"seed {SEED}: blocks at lines {here} were split here: the pool broke"
    assert snapshot(store) == before
    assert _workers_left() == set()
    store.close()


def test_too_many_problems_stop_the_workers_early(tmp_path, monkeypatch):
    _convert("workers", monkeypatch)
    rng = random.Random(SEED)
    good = to_text(catalog_lines()).splitlines(keepends=True)
    bad = [f'{{"table": "sources", "row": {rng.random()}}}\n' for _ in range(MAX_PROBLEMS * 4)]
    folder = tmp_path / "many"
    folder.mkdir()
    store = open_store(database_url("sqlite", folder, migrated=True))
    path = write_catalog(folder / "catalog.jsonl", text="".join(good + bad))
    with pytest.raises(ImportFailed) as refused:
        import_catalog(store, path)
    lines = [p.line for p in refused.value.problems]
    assert lines == list(range(len(good) + 1, len(good) + 1 + MAX_PROBLEMS)), f"seed {SEED}"
    assert CountingPool.tasks < len(good) + len(bad)  # stopped before the end
    assert _workers_left() == set()
    store.close()


def test_a_killed_worker_leaves_the_rest_of_the_import_to_this_process(tmp_path, monkeypatch):
    text = messy_catalog(random.Random(SEED))
    _convert("here", monkeypatch)
    here = _import(tmp_path, "here", text, BadLines(skip_invalid=True))
    _convert("workers", monkeypatch)
    parent, real = os.getpid(), conversion.convert

    def dies_in_a_worker(number, line_text):
        if os.getpid() != parent:
            os._exit(9)  # gone without a word, as after the kernel's out-of-memory killer
        return real(number, line_text)

    monkeypatch.setattr(conversion, "convert", dies_in_a_worker)
    workers = _import(tmp_path, "workers", text, BadLines(skip_invalid=True))
    assert CountingPool.tasks >= 1
    assert workers == here, f"seed {SEED}"
    assert _workers_left() == set()


@pytest.mark.parametrize(("setting", "pool_used"), [("0", False), ("1", True), (" 2 ", True)])
def test_the_workers_setting_decides_where_lines_are_converted(tmp_path, monkeypatch, setting, pool_used):
    _convert("workers", monkeypatch)
    monkeypatch.setattr(conversion, "worker_count", WORKER_COUNT)  # the real one, reading the setting
    monkeypatch.setenv(conversion.WORKERS_ENV, setting)
    folder = tmp_path / "setting"
    folder.mkdir()
    store = open_store(database_url("sqlite", folder, migrated=True))
    report = import_catalog(store, write_catalog(folder / "catalog.jsonl.zst", catalog_lines()))
    store.close()
    assert report.added["runs"] == 2
    assert (CountingPool.tasks > 0) == pool_used


def test_a_bad_workers_setting_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv(conversion.WORKERS_ENV, "two")
    db = tmp_path / "never.db"
    result = CliRunner().invoke(app, ["import", str(write_catalog(tmp_path / "c.jsonl.zst")), "--db", str(db)])
    assert result.exit_code == 1
    assert "KERNELINDEX_IMPORT_WORKERS must be a whole number of processes, not 'two'" in result.stderr
    assert not db.exists()


def _import_in_a_daemon(db: str, path: str) -> None:
    store = open_store(db)
    report = import_catalog(store, Path(path))
    store.close()
    sys.exit(0 if report.added["runs"] == 2 else 3)


def test_a_daemonic_process_imports_without_workers(tmp_path, monkeypatch):
    """A daemonic process may not start children: it converts every line itself."""
    _convert("workers", monkeypatch)
    monkeypatch.setattr(conversion, "worker_count", WORKER_COUNT)
    db = database_url("sqlite", tmp_path, migrated=True)
    path = write_catalog(tmp_path / "catalog.jsonl.zst", catalog_lines())
    daemon = multiprocessing.get_context("fork").Process(target=_import_in_a_daemon, args=(db, str(path)), daemon=True)
    daemon.start()
    daemon.join(60)
    assert daemon.exitcode == 0


def test_runs_carry_one_row_per_protocol_and_environment_digest_as_the_file_first_gives_it():
    """What a worker sends back names each protocol and environment row once per block (marshal
    writes a shared object once, and it comes back shared), checked and encoded once: runs whose
    protocol has one digest carry one row, whose manifest is the text the file gives first, even
    when a later run writes the same record with its keys in another order (each run keeps its own
    text in its own manifest). So what is stored does not depend on how blocks fall to workers."""

    def run_rows(lines: list[dict]) -> list[dict]:
        conversion._PARTS.clear()
        block = "".join(json.dumps(line) + "\n" for line in lines).encode()
        converted = conversion.unpacked(conversion.convert_block_packed(1, block))
        assert all(line.problem is None for line in converted)
        return [line.columns for line in converted if line.table == "runs"]

    lines = catalog_lines()
    first, second = run_rows(lines)
    assert first["protocol_row"] is second["protocol_row"]
    assert first["environment_row"] is second["environment_row"]

    runs = [line for line in lines if line["table"] == "benchmark_runs"]
    given_first = json.loads(json.dumps(runs[0]["row"]["manifest"]["protocol"]))
    protocol = runs[-1]["row"]["manifest"]["protocol"]
    protocol["spec"] = dict(reversed(protocol["spec"].items()))
    first, second = run_rows(lines)
    assert first["protocol_row"] is second["protocol_row"]
    assert first["environment_row"] is second["environment_row"]
    assert first["protocol_row"]["manifest"] == json_bytes(given_first)
    assert json_bytes(protocol) in second["manifest"]  # the second run's own text, in its own manifest
