"""The `kernelindex` script loads only the command it is asked for: each command, so loaded alone in a
fresh interpreter, must still work as it does in the whole CLI (its help, its options), and a name that
is not a command gets the whole CLI's answer."""

from __future__ import annotations

import os
import random
import subprocess
import sys

from typer.testing import CliRunner

from kernelindex.cli import ENTRIES, app


def _alone(*argv: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kernelindex.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"},
    )


def test_every_command_loaded_alone_answers_as_in_the_whole_cli():
    names = list(ENTRIES)
    random.shuffle(names)
    started = {name: _alone(name, "--help") for name in names}  # at once: each is a fresh interpreter
    for name, proc in started.items():
        alone, _ = proc.communicate(timeout=120)
        whole = CliRunner().invoke(
            app, [name, "--help"], prog_name="python -m kernelindex.cli", env={"COLUMNS": "100", "NO_COLOR": "1"}
        )
        assert proc.returncode == 0 == whole.exit_code, f"{name}: {alone[-2000:]}"
        assert f"Usage: python -m kernelindex.cli {name} " in alone and alone == whole.output, name


def test_a_name_that_is_no_command_gets_the_whole_clis_answer():
    proc = _alone("serv")  # close to a command: the whole CLI knows which
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "No such command 'serv'. Did you mean 'serve'" in output
    assert "Traceback" not in output
