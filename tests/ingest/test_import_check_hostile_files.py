"""`kernelindex import --check` (and a plain import) of hostile files: one clear error naming the file
(and the line where there is one), never a traceback, nothing stored."""

from __future__ import annotations

import random
import re

import pytest
import zstandard
from typer.testing import CliRunner

from kernelindex.cli import app

GOOD_LINE = b'{"table": "sources", "row": {"slug": "x"}}\n'


def _hostile(seed: int) -> dict[str, bytes]:
    """Each hostile document, some parts drawn from a seeded generator (repeatable)."""
    rng = random.Random(seed)
    return {
        "open-brackets": b"[" * 1000,  # 2 KB that json.loads sniffed into a RecursionError
        "deep-objects": b'{"a":' * 5000 + b"1" + b"}" * 5000,
        "huge-number": b'{"n": 1' + b"0" * 5000 + b"}\n",
        "huge-exponent": b'{"n": 1e99999}\n',
        "nul-bytes": b'{"a": "\x00\x00"}\n\x00\x00\x00',
        "latin-1": '{"name": "caf\u00e9"}\n'.encode("latin-1"),
        "utf-16": '{"name": "x"}\n'.encode("utf-16"),
        "random-bytes": bytes(rng.randrange(256) for _ in range(4096)),
        "truncated-line": GOOD_LINE[: rng.randrange(5, len(GOOD_LINE) - 2)],
    }


HOSTILE = sorted(_hostile(0))


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".jsonl.zst"])
@pytest.mark.parametrize("check", [True, False])
def test_hostile_files_are_refused_by_name(tmp_path, name, suffix, check):
    body = _hostile(0)[name]
    path = tmp_path / f"{name}{suffix}"
    path.write_bytes(zstandard.ZstdCompressor().compress(body) if suffix.endswith(".zst") else body)
    db = tmp_path / "s.db"
    result = CliRunner().invoke(app, ["import", *(["--check"] if check else []), str(path), "--db", str(db)])
    assert isinstance(result.exception, SystemExit), (name, suffix, repr(result.exception))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and str(path) in result.output, result.output
    if suffix != ".json":  # a catalog's refusal names its line
        assert re.search(rf"{re.escape(str(path))}:\d+", result.output), result.output
    assert not check or not db.exists()  # a check of a store that does not exist makes none


def test_a_truncated_zstd_file_is_refused_by_name(tmp_path):
    whole = zstandard.ZstdCompressor().compress(GOOD_LINE * 2000)
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(whole[: len(whole) // 2])
    result = CliRunner().invoke(app, ["import", "--check", str(path), "--db", str(tmp_path / "s.db")])
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1 and str(path) in result.output and "Traceback" not in result.output, result.output
