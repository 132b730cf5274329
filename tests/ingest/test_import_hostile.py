"""Hostile import files through ``kernelindex import``: one clear error, a non-zero exit, the store
exactly as before, and never a driver error or a traceback. Complements test_bad_input.py.

The property test puts a seeded random hostile value into a seeded random field of the small
catalog; set KERNELINDEX_TEST_SEED to repeat a run.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from ingest_kit import snapshot
from sqlalchemy import text
from typer.testing import CliRunner

from catalog_kit import catalog_lines, to_text, write_catalog
from hostile_kit import HOSTILE_VALUES, SEED
from kernelindex.cli import app

SRC = Path(__file__).resolve().parents[2] / "src" / "kernelindex"
TRACE = {
    "definition": "vector_add_f32",
    "solution": "vector_add_torch",
    "workload": {"uuid": "3a1f0e2c-0000-4000-8000-000000000001", "axes": {"n": 1000}, "inputs": {}},
    "evaluation": {
        "status": "PASSED",
        "environment": {"hardware": "NVIDIA B200", "libs": {}},
        "timestamp": "2026-07-01T10:00:00",
        "log": "",
        "performance": {"latency_ms": 0.0123, "reference_latency_ms": 0.05, "speedup_factor": 4.0},
    },
}


def refuse(store, db_url, path, *expected: str) -> str:
    before = snapshot(store)
    result = CliRunner().invoke(app, ["import", str(path), "--db", db_url])
    assert isinstance(result.exception, SystemExit), result.exception  # not a crash
    assert result.exit_code == 1, result.output
    message = result.stderr
    assert message.count("error: ") == 1 and "Traceback" not in result.output, message
    assert str(path) in message
    for want in expected:
        assert want in message, message
    assert snapshot(store) == before
    return message


def changed(tmp_path, name: str, change) -> Path:
    lines = catalog_lines()
    change(lines)
    return write_catalog(tmp_path / name, lines)


def with_text(tmp_path, name: str, old: str, new: str, line: int) -> Path:
    """The small catalog with ``old`` replaced by the raw JSON text ``new`` on one line (1-based)."""
    rows = to_text(catalog_lines()).splitlines(keepends=True)
    assert old in rows[line - 1]
    rows[line - 1] = rows[line - 1].replace(old, new, 1)
    return write_catalog(tmp_path / name, text="".join(rows))


def test_only_blank_lines(loaded, db_url, tmp_path):
    for name in ("blank.jsonl.zst", "blank.jsonl"):
        refuse(loaded, db_url, write_catalog(tmp_path / name, text="\n  \n\n\t\n"), "empty")


def test_a_line_that_is_a_json_array(loaded, db_url, tmp_path):
    refuse(loaded, db_url, write_catalog(tmp_path / "a.jsonl.zst", text='[{"table": "sources"}]\n'), ":1: table:")


@pytest.mark.parametrize("missing", ["table", "row"])
def test_a_line_without_table_or_row_names_the_missing_field(loaded, db_url, tmp_path, missing):
    path = changed(tmp_path, "m.jsonl.zst", lambda lines: lines[0].pop(missing))
    refuse(loaded, db_url, path, f":1: {missing}:")


@pytest.mark.parametrize(
    "old, new, line, expected",
    [
        ('"sizeBytes":120', '"sizeBytes":' + "9" * 30, 15, ":15: sizeBytes: expected a 64-bit integer"),
        ('"value":5000', '"value":1e400', 10, ":10: malformed JSON: the number 1e400 is out of range"),
        (
            '"unit":"ns"',
            '"unit":"\\ud800"',
            10,
            ":10: malformed JSON: the string '\\ud800' holds a lone UTF-16 surrogate",
        ),
        ('"unit":"ns"', '"unit":"n\\u0000s"', 10, ":10: malformed JSON: the string 'n\\x00s' holds a NUL character"),
        ('"metric":"latency"', '"metric":' + "[" * 5000 + "]" * 5000, 10, ":10: malformed JSON: nested too deeply"),
        ('"mediaType":"text/x-python"', '"mediaType":["text/x-python"]', 15, ":15: mediaType: expected a string"),
        ('"sampleCount":50}', '"sampleCount":true}', 10, ":10: sampleCount: expected a 64-bit integer"),
        ('"retractedAt":null', '"hasRawEvidence":"false","retractedAt":null', 8, ":8: hasRawEvidence: expected bool"),
        (
            '"workloadId":"01900000-0000-7000-8000-000000000004"',
            '"workloadId":["x"]',
            8,
            ":8: workloadId: expected str",
        ),
        # a retraction the run row states becomes a record event, whose columns must hold it
        ('"retractedAt":null', '"retractedAt":{"a":1}', 9, ":9: retractedAt: expected a string"),
        ('"retractedAt":null', '"retractedAt":"' + "9" * 40 + '"', 9, ":9: retractedAt: longer than 32 characters"),
        (
            '"retractedAt":null,"retractionReason":null',
            '"retractedAt":"2026-03-01T00:00:00.000Z","retractionReason":[1]',
            9,
            ":9: retractionReason: expected a string",
        ),
    ],
)
def test_values_no_column_can_hold_are_refused_by_line_and_field(loaded, db_url, tmp_path, old, new, line, expected):
    """Each of these used to reach the database driver (OverflowError, UnicodeEncodeError,
    ProgrammingError, TypeError: a traceback), or was kept silently changed (1e400 as infinity)."""
    refuse(loaded, db_url, with_text(tmp_path, "v.jsonl.zst", old, new, line), expected)


def test_any_hostile_value_in_any_field_is_stored_or_refused_never_a_crash(db_url, tmp_path):
    """Seeded property: put a hostile value into a random field of a random line; the import either
    succeeds or is refused with one error naming the file and line, leaving the store as it was."""
    from kernelindex.store import open_store

    rng = random.Random(SEED)
    print(f"hostile import seed: {SEED} (set KERNELINDEX_TEST_SEED to repeat)")
    store = open_store(db_url)
    try:
        for attempt in range(12):
            lines = catalog_lines()
            number = rng.randrange(len(lines))
            field = rng.choice(sorted(lines[number]["row"]))
            value = rng.choice(HOSTILE_VALUES)
            lines[number]["row"][field] = value
            path = write_catalog(tmp_path / f"p{attempt}.jsonl.zst", lines)
            before = snapshot(store)
            result = CliRunner().invoke(app, ["import", str(path), "--db", db_url])
            where = f"line {number + 1} {lines[number]['table']}.{field} = {str(value)[:30]!r} (seed {SEED})"
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                f"{where}: {result.exception!r}"
            )
            if result.exit_code != 0:
                errors = result.stderr.splitlines()
                assert result.exit_code == 1 and errors, f"{where}: {result.output}"
                # one line per bad line of the file (a renamed id orphans its children), each with file and line
                assert all(e.startswith(f"error: {path}:") for e in errors), f"{where}: {result.stderr}"
                assert snapshot(store) == before, where
    finally:
        store.close()


def test_runs_in_one_batch_keep_every_link_when_only_some_implementations_are_stored(store, db_url, tmp_path):
    """The first run's implementation is missing from the file (a pending link) and the second's is
    there: one multi-row INSERT used to take its columns from the first run and silently drop the
    second run's implementation_id."""
    path = changed(tmp_path, "c.jsonl.zst", lambda lines: lines.pop(5))  # implementation v1
    result = CliRunner().invoke(app, ["import", str(path), "--db", db_url])
    assert result.exit_code == 0, result.output
    with store.begin() as conn:
        links = dict(conn.execute(text("SELECT id, implementation_id FROM runs")).all())
    assert links == {
        "01900000-0000-7000-8000-000000000007": None,
        "01900000-0000-7000-8000-000000000010": "01900000-0000-7000-8000-000000000006",
    }


def test_paths_that_are_not_importable(loaded, db_url, tmp_path):
    refuse(loaded, db_url, tmp_path / "missing.jsonl.zst", "no such file or directory")
    (tmp_path / "empty").mkdir()
    refuse(loaded, db_url, tmp_path / "empty", "neither definition.json nor *.json bundles")


def test_problem_folder_with_a_broken_definition(loaded, db_url, tmp_path):
    folder = tmp_path / "pack"
    shutil.copytree(SRC / "problems" / "moe_load_balance_bwd", folder)
    (folder / "definition.json").write_text('{"name": ')
    message = refuse(loaded, db_url, folder, "definition.json:1:", "invalid JSON")
    assert "Traceback" not in message


def test_trace_file_with_a_bad_line(loaded, db_url, tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(TRACE) + "\n{not json\n")
    refuse(loaded, db_url, path, f"{path}:2:", "invalid JSON")


def test_trace_file_starting_with_a_blank_line_is_still_a_trace_file(loaded, db_url, tmp_path):
    """The kind of a .jsonl used to be guessed from its first line, blank or not: a trace file with a
    leading blank line was read as a catalog and refused with a misleading 'table' error."""
    path = tmp_path / "traces.jsonl"
    path.write_text("\n" + json.dumps(TRACE) + "\n{not json\n")
    refuse(loaded, db_url, path, f"{path}:3:", "invalid JSON")


def test_bundle_whose_protocol_outgrows_a_column_is_refused_alike_on_every_backend(loaded, db_url, tmp_path):
    """A 500-character protocol family passes the schema but not the column (200): PostgreSQL used to
    refuse the whole import with a driver message naming no file; SQLite stored it."""
    from kernelindex.records.canonical import digest

    bundle = json.loads((SRC / "sample" / "sol-009-sf-tensor-submission-4273.json").read_text())
    bundle["protocol"]["spec"]["comparability"]["family"] = "z" * 500
    bundle["run"]["spec"]["protocolDigest"] = digest(bundle["protocol"])
    path = tmp_path / "long.json"
    path.write_text(json.dumps(bundle))
    refuse(loaded, db_url, path, "protocol.family: longer than 200 characters")


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            json.dumps({**TRACE, "solution": "\ud800"}),
            ":1: malformed JSON: the string '\\ud800' holds a lone UTF-16 surrogate",
        ),
        (json.dumps(TRACE).replace("0.0123", "1e400"), ":1: malformed JSON: the number 1e400 is out of range"),
        (json.dumps({**TRACE, "solution": "a\x00b"}), ":1: malformed JSON: the string 'a\\x00b' holds a NUL character"),
        (json.dumps(TRACE).replace("0.0123", "1e308"), ":1: evaluation.performance.latency_ms: 1e+308 ms is past any"),
        (
            json.dumps({**TRACE, "evaluation": {**TRACE["evaluation"], "performance": "fast"}}),
            ":1: evaluation.performance: must be an object, got 'fast'",
        ),
        (json.dumps({**TRACE, "solution": ["a"]}), ":1: solution: must be a name (a string), got \"['a']\""),
    ],
)
def test_trace_lines_no_store_can_hold(loaded, db_url, tmp_path, line, expected):
    """Trace lines were read with plain json.loads: these reached the digest or the driver as a traceback."""
    path = tmp_path / "traces.jsonl"
    path.write_text(line + "\n")
    refuse(loaded, db_url, path, expected)


def test_trace_file_with_bytes_that_are_not_utf8(loaded, db_url, tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_bytes(json.dumps(TRACE).encode() + b"\n\xff\xfe\n")
    refuse(loaded, db_url, path, ":2: not UTF-8 text")


def test_trace_line_with_a_raw_line_separator_inside_a_string(store, db_url, tmp_path):
    """U+2028 is legal inside a JSON string; str.splitlines used to cut the line there."""
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps({**TRACE, "solution": "a\u2028b"}, ensure_ascii=False) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["import", str(path), "--db", db_url])
    assert result.exit_code == 0, result.output


def test_two_different_records_under_one_id_in_one_file(store, db_url, tmp_path):
    """Used to reach the database as a bare UNIQUE/primary-key violation naming no file or line."""

    def reuse_id(lines):
        twin = json.loads(json.dumps(lines[10]))  # a measurement of the second run, given the first one's id
        twin["row"].update(id=lines[9]["row"]["id"], statistic="max")
        lines.insert(11, twin)

    path = changed(tmp_path, "twin.jsonl.zst", reuse_id)
    refuse(
        store,
        db_url,
        path,
        ":12: id: measurements id 01900000-0000-7000-8000-000000000008",
        "different record on line 10",
    )


def test_a_jsonl_file_whose_first_line_has_no_end_is_refused_by_line_not_read_whole(loaded, db_url, tmp_path):
    """Telling a trace file from a catalog read the first line whole: a file with no line end was
    read into memory before anything was said. Now the kind is told from a bounded read, and the
    catalog reader refuses the line by its number."""
    from kernelindex.ingest.jsonlines import MAX_LINE

    path = tmp_path / "endless.jsonl"
    with open(path, "wb") as out:
        out.write(b"\n\n" + b"[" * (MAX_LINE + random.Random(SEED).randint(1, 1 << 16)))
    refuse(loaded, db_url, path, f"{path}:3:", f"longer than {MAX_LINE} bytes")


@pytest.mark.parametrize("kind", ["bundle", "traces"])
def test_files_read_whole_are_refused_past_their_limit_by_name(loaded, db_url, tmp_path, monkeypatch, kind):
    from kernelindex.ingest import whole_files

    path = tmp_path / ("run.json" if kind == "bundle" else "traces.jsonl")
    path.write_text(json.dumps(TRACE) + "\n")
    limit = random.Random(SEED).randint(16, path.stat().st_size - 1)
    monkeypatch.setattr(whole_files, "MAX_WHOLE_FILE", limit)
    refuse(loaded, db_url, path, f"more than {limit} bytes, the most a file read whole may hold")


def test_a_file_naming_many_unmodelled_tables_gets_a_short_summary(db_url, tmp_path):
    """Each unmodelled table is kept and counted; the summary lists the 20 largest and says how many
    more there are (a hostile file could name thousands), --json every one."""
    from kernelindex.cli.imports import SHOWN

    rng = random.Random(SEED)
    extra = rng.randint(1, 15)
    counts = {f"future_table_{i}": rng.randint(1, 3) for i in range(SHOWN + extra)}
    foreign = [{"table": name, "row": {"n": k}} for name, n in counts.items() for k in range(n)]
    rng.shuffle(foreign)
    path = write_catalog(tmp_path / "many.jsonl.zst", [*catalog_lines(), *foreign])
    shown = CliRunner().invoke(app, ["import", str(path), "--db", db_url])
    assert shown.exit_code == 0, shown.stderr
    listed = [line for line in shown.stdout.splitlines() if "kept rows of unmodelled table" in line]
    assert len(listed) == SHOWN
    smallest_shown = min(int(line.rsplit(": ", 1)[1].split()[0]) for line in listed)
    rest = sorted(counts.values(), reverse=True)[SHOWN:]
    assert f"… and {extra} more ({sum(rest)} rows; --json lists all)" in shown.stdout
    assert smallest_shown >= max(rest)
    as_json = CliRunner().invoke(app, ["import", str(path), "--db", db_url, "--check", "--json"])
    assert json.loads(as_json.stdout)[0]["keptForeignTables"] == counts
