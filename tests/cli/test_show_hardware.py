"""`kernelindex show` names a run's hardware as people read it, not as the record's values joined by slashes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.views.formatting import format_hardware

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "kernelindex" / "sample"


@pytest.mark.parametrize(
    "hardware, text",
    [
        # a harness run on a CPU: was "amd / AMD EPYC / x86_64 / 25276502016 / 1"
        (
            {"vendor": "amd", "product": "AMD EPYC", "architecture": "x86_64", "memoryBytes": 25276502016, "count": 1},
            "AMD EPYC (x86_64, 23.5 GiB memory)",
        ),
        (
            {"vendor": "nvidia", "product": "B200", "architecture": "sm_100", "count": 8, "interconnect": "NVLink"},
            "8 × nvidia B200 (sm_100, NVLink)",
        ),
        ({"vendor": "nvidia", "product": "NVIDIA H200"}, "NVIDIA H200"),
        ({}, ""),
    ],
)
def test_hardware_reads_as_a_product_with_its_details(hardware, text):
    assert format_hardware(hardware) == text


def test_show_prints_the_seed_runs_hardware(tmp_path):
    db = str(tmp_path / "s.db")
    assert CliRunner().invoke(app, ["import", str(SAMPLE), "--db", db]).exit_code == 0
    result = CliRunner().invoke(app, ["show", "149b7c1a", "--db", db])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("hardware "))
    assert line.split(None, 1)[1] == "NVIDIA B200 (sm_100)"
