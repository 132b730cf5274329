"""``kernelindex log``: checkpoint, prove and check over a local store, with their exit codes."""

from __future__ import annotations

import json
from importlib import resources

from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.store import open_store
from log_tamper_kit import forge_leaf

SAMPLE = resources.files("kernelindex") / "sample"


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.output, result.exception)
    return result


def test_prove_and_check_and_their_failures(tmp_path):
    db = str(tmp_path / "t.db")
    run("import", str(SAMPLE), "--db", db)
    saved = tmp_path / "seen.json"
    saved.write_text(run("log", "checkpoint", "--db", db, "--json").stdout)
    note = run("log", "checkpoint", "--db", db).stdout
    assert note == json.loads(saved.read_text())["note"] and "\n\n\u2014 " in note
    digest = json.loads(run("show", "149b7c1a", "--db", db, "--json").stdout)["digest"]
    proved = json.loads(run("log", "prove", digest, "--db", db, "--json").stdout)
    assert proved["verified"] and proved["table"] == "runs"
    failed = run("log", "prove", "sha256:" + "0" * 64, "--db", db, code=1)
    assert "is in the log" in failed.output and "no record" in failed.output
    assert json.loads(run("log", "check", "--checkpoint", str(saved), "--db", db, "--json").stdout)["consistent"]
    store = open_store(db)  # history rewritten behind the store's back: the first leaf replaced
    with store.engine.connect() as conn, conn.begin():
        forged = bytes([1] * 32)  # a leaf is kept as its digest's raw bytes
        forge_leaf(conn, 0, forged)
    store.close()
    rewritten = run("log", "check", "--checkpoint", str(saved), "--db", db, code=1)
    assert "proof failed" in rewritten.output
    (tmp_path / "bare.txt").write_text(note)
    assert "bare note" in run("log", "check", "--checkpoint", str(tmp_path / "bare.txt"), "--db", db, code=2).output
