"""A second server on a taken address: one clear line and a non-zero status before anything else runs; the
demo's server is a fresh `kernelindex serve`."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from process_kit import answers, free_port, wait_for

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "sample"


@pytest.fixture
def taken_port():
    """A port something already listens on (as a running `kernelindex serve` would)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_serve_refuses_a_taken_port(tmp_path, taken_port):
    db = str(tmp_path / "s.db")
    assert CliRunner().invoke(app, ["import", str(SAMPLE), "--db", db]).exit_code == 0
    result = CliRunner().invoke(app, ["serve", "--db", db, "--port", str(taken_port), "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert f"127.0.0.1:{taken_port}" in result.output and "--port" in result.output
    assert "serving" not in result.output and "Traceback" not in result.output


def test_a_second_demo_stops_before_importing_or_rerunning(tmp_path, taken_port):
    db = tmp_path / "demo.db"
    result = CliRunner().invoke(app, ["demo", "--no-export", "--db", str(db), "--port", str(taken_port)])
    assert result.exit_code == 2, result.output
    assert "already in use" in result.output and "another `kernelindex serve`" in result.output
    assert "importing" not in result.output and not db.exists()  # nothing imported, nothing rerun


@pytest.mark.parametrize("port", ["0", "65536", "99999999999999999999"])
def test_ports_outside_the_range_are_usage_errors(tmp_path, port):
    result = CliRunner().invoke(app, ["serve", "--db", str(tmp_path / "x.db"), "--port", port])
    assert result.exit_code == 2 and "--port" in result.output, result.output


def test_the_demo_serves_from_a_fresh_serve_process(tmp_path):
    # what the import loaded stays behind: the process becomes `kernelindex serve` (same pid), not a server
    # forked from the importing process
    port = free_port()
    argv = [sys.executable, "-m", "kernelindex.cli", "demo", "--no-export", "--no-eval", "--db", str(tmp_path / "d.db")]
    proc = subprocess.Popen([*argv, f"--port={port}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: answers(port), "the demo did not serve")
        command = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert command[2:4] == [b"kernelindex.cli", b"serve"] and str(tmp_path / "d.db").encode() in command
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    output = proc.stdout.read()
    assert "importing" in output and output.count("kernelindex: serving") == 1
