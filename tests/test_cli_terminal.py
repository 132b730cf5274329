"""On a real 80-column terminal (a pseudo-terminal, as a person's shell gives), the read commands keep
every identifier whole on one line: tables shrink text columns, never digests or ids."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.sample import sample_paths

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def on_a_terminal(*args: str, columns: int = 80) -> str:
    """What ``kernelindex ARGS`` writes to a terminal ``columns`` wide (colours and cursor codes removed)."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelindex.cli", *args], stdin=child, stdout=child, stderr=child, env=env
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=300) == 0, b"".join(chunks).decode(errors="replace")
    os.close(main)
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("cli-terminal") / "t.db")
    assert CliRunner().invoke(app, ["import", *map(str, sample_paths()), "--db", path]).exit_code == 0
    return path


def test_show_runs_and_rank_keep_identifiers_whole_at_80_columns(db):
    rows = json.loads(CliRunner().invoke(app, ["runs", "--db", db, "--json"]).stdout)
    assert len(rows) == 2
    shown = on_a_terminal("show", rows[0]["digest"][7:15], "--db", db)
    assert re.search(rf"^run\s+{re.escape(rows[0]['digest'])}$", shown, re.M), shown
    assert re.search(rf"^id\s+{rows[0]['id']}$", shown, re.M), shown
    assert max(map(len, shown.splitlines())) > 80  # the lines were not folded to fit
    listed = on_a_terminal("runs", "--db", db)
    for row in rows:
        assert row["digest"][:19] in listed, listed
    assert "mix 2 software stacks" in " ".join(listed.split())  # the note may wrap; only its words matter


@pytest.fixture(scope="module")
def real_db(tmp_path_factory, catalog_path) -> str:
    path = str(tmp_path_factory.mktemp("cli-terminal-real") / "r.db")
    made = CliRunner().invoke(app, ["import", *map(str, sample_paths()), str(catalog_path), "--db", path])
    assert made.exit_code == 0, made.output
    return path


def test_rank_keeps_digests_and_values_whole_at_80_columns(real_db):
    groups = json.loads(CliRunner().invoke(app, ["rank", "149b7c1a", "--db", real_db, "--json"]).stdout)
    ranked = on_a_terminal("rank", "149b7c1a", "--db", real_db)
    assert f"group {groups[0]['comparisonKey']}" in ranked.splitlines()
    for row in groups[0]["rows"]:
        line = next(x for x in ranked.splitlines() if row["digest"][:19] in x)
        assert row["display"] in line and row["solDisplay"] in line and row["speedupDisplay"] in line, line
