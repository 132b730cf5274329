"""A second server on a taken address: one clear line and a non-zero status before anything else runs."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app

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
