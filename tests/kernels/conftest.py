"""Fixtures for our kernels' tests: a printed seed, and Triton's interpreter in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SEED = torch.seed() % 2**31
print(f"tests/kernels seed: {SEED}")
CHECKS = Path(__file__).with_name("interpreter_checks.py")


@pytest.fixture
def seed():
    torch.manual_seed(SEED)
    return SEED


@pytest.fixture
def interpreted():
    """Run interpreter_checks.py with TRITON_INTERPRET=1; returns its per-output comparisons."""

    def run(*args) -> list[dict]:
        env = {**os.environ, "TRITON_INTERPRET": "1"}
        done = subprocess.run(
            [sys.executable, str(CHECKS), *map(str, args), str(SEED)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"seed {SEED}: {done.stderr[-3000:]}"
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run
