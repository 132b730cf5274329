"""Bad input: one clear message (file, line, field, reason), a non-zero exit, the store untouched.

Each case starts from a store that already holds a valid catalog, feeds one small hand-made bad
file through ``kernelindex import`` and compares everything stored before and after.
"""

from __future__ import annotations

import json

import pytest
import zstandard
from ingest_kit import snapshot
from typer.testing import CliRunner

from catalog_kit import bundle, catalog_lines, implementation, operation, to_text, workload, write_catalog
from kernelindex.cli import app


def refuse(loaded, db_url, path, *expected: str) -> str:
    before = snapshot(loaded)
    result = CliRunner().invoke(app, ["import", str(path), "--db", db_url])
    assert result.exit_code == 1, result.output
    message = result.stderr
    assert message.count("error: ") == 1, message  # one clear message, not a cascade
    assert str(path) in message
    for text in expected:
        assert text in message, message
    assert snapshot(loaded) == before
    return message


def lines_with(change) -> list[dict]:
    lines = catalog_lines()
    change(lines)
    return lines


def test_malformed_line(loaded, db_url, tmp_path):
    text = to_text(catalog_lines()).splitlines(keepends=True)
    text[2] = text[2][: len(text[2]) // 2] + "\n"
    path = write_catalog(tmp_path / "bad.jsonl.zst", text="".join(text))
    refuse(loaded, db_url, path, f"{path}:3:", "malformed JSON")


def test_truncated_zstd_file(loaded, db_url, tmp_path):
    whole = zstandard.ZstdCompressor().compress(to_text(catalog_lines()).encode())
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(whole[: len(whole) - 10])
    refuse(loaded, db_url, path, "truncated")


def test_not_a_zstd_file(loaded, db_url, tmp_path):
    path = tmp_path / "plain.jsonl.zst"
    path.write_text(to_text(catalog_lines()))
    refuse(loaded, db_url, path, "not a zstd file")


def test_record_with_an_unknown_field(loaded, db_url, tmp_path):
    def add_field(lines):
        lines[4]["row"]["manifest"]["spec"]["bogus"] = 1

    path = write_catalog(tmp_path / "unknown.jsonl.zst", lines_with(add_field))
    refuse(loaded, db_url, path, f"{path}:5:", "manifest.spec.bogus")


def test_ambiguous_duration(loaded, db_url, tmp_path):
    op = operation()
    b = bundle(workload(op), implementation(op))
    b["run"]["spec"]["timing"]["latencyNs"]["median"] = "0.0000005 ms"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(b))
    refuse(loaded, db_url, path, "run.spec.timing.latencyNs.median", "ambiguous")


def test_digest_that_does_not_match(loaded, db_url, tmp_path):
    def wrong_digest(lines):
        lines[4]["row"]["workloadDigest"] = "sha256:" + "0" * 64

    path = write_catalog(tmp_path / "digest.jsonl.zst", lines_with(wrong_digest))
    refuse(loaded, db_url, path, f"{path}:5:", "workloadDigest", "digest mismatch")


def test_run_digest_that_does_not_match_its_manifest(loaded, db_url, tmp_path):
    def edit_run(lines):
        run = next(line for line in lines if line["table"] == "benchmark_runs")
        run["row"]["manifest"]["run"]["spec"]["timing"]["latencyNs"]["median"] += 1

    path = write_catalog(tmp_path / "run-digest.jsonl.zst", lines_with(edit_run))
    refuse(loaded, db_url, path, "runDigest", "digest mismatch")


def test_duplicate_key_in_one_object(loaded, db_url, tmp_path):
    text = to_text(catalog_lines()).splitlines(keepends=True)
    text[1] = text[1].replace('{"table":"projects",', '{"table":"projects","table":"projects",', 1)
    path = write_catalog(tmp_path / "dup.jsonl.zst", text="".join(text))
    refuse(loaded, db_url, path, f"{path}:2:", "duplicate key 'table'")


@pytest.mark.parametrize("name", ["empty.jsonl.zst", "empty.json", "empty.jsonl"])
def test_empty_file(loaded, db_url, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"")
    refuse(loaded, db_url, path, "empty")


def test_empty_zstd_stream(loaded, db_url, tmp_path):
    path = tmp_path / "nothing.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b""))
    refuse(loaded, db_url, path, "empty")


def test_second_file_bad_first_file_kept_out_too(loaded, db_url, tmp_path):
    """Paths are checked before anything is imported: a missing second path imports nothing."""
    good = write_catalog(tmp_path / "other.jsonl.zst")
    before = snapshot(loaded)
    result = CliRunner().invoke(app, ["import", str(good), str(tmp_path / "missing.json"), "--db", db_url])
    assert result.exit_code == 1 and "no such file" in result.stderr
    assert snapshot(loaded) == before


def test_workload_that_names_the_wrong_operation(loaded, db_url, tmp_path):
    def second_operation(lines):
        other = json.loads(json.dumps(lines[2]))
        other["row"]["id"] = "01900000-0000-7000-8000-000000000777"
        other["row"]["slug"] = "toy-scale-2"
        other["row"]["manifest"]["spec"]["family"] = "elementwise-two"
        from kernelindex.records.canonical import digest

        other["row"]["semanticDigest"] = digest(other["row"]["manifest"])
        lines.insert(3, other)
        lines[5]["row"]["operationId"] = other["row"]["id"]  # the workload now points at it

    path = write_catalog(tmp_path / "wrong-op.jsonl.zst", lines_with(second_operation))
    refuse(loaded, db_url, path, f"{path}:6:", "operationId", "spec.operationSpecDigest")


def test_nan_is_not_json(loaded, db_url, tmp_path):
    text = to_text(catalog_lines()).splitlines(keepends=True)
    text[0] = text[0].replace('"policy":null', '"policy":NaN')
    path = write_catalog(tmp_path / "nan.jsonl.zst", text="".join(text))
    refuse(loaded, db_url, path, f"{path}:1:", "NaN is not JSON")


def test_comparison_key_that_does_not_match(loaded, db_url, tmp_path):
    def wrong_key(lines):
        run = next(line for line in lines if line["table"] == "benchmark_runs")
        run["row"]["comparisonKey"] = "sha256:" + "1" * 64

    path = write_catalog(tmp_path / "key.jsonl.zst", lines_with(wrong_key))
    refuse(loaded, db_url, path, "comparisonKey", "key mismatch")
