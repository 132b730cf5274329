"""Fixtures of the harness tests."""

from __future__ import annotations

import shutil

import pytest
from harness_testkit import PROBLEMS


@pytest.fixture
def problem_copy(tmp_path):
    """A private copy of the vector-add problem (for solutions that attack the problem folder)."""
    target = tmp_path / "vector_add"
    shutil.copytree(PROBLEMS / "vector_add", target)
    return target
