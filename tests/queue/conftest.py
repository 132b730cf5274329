"""Fixtures of the queue tests."""

from __future__ import annotations

import pytest
from queue_kit import QUICK, VECTOR_ADD, VECTOR_ADD_SOLUTION, fresh_store

from kernelindex.services import harness_adapter as harness
from store_fixtures import BACKENDS


@pytest.fixture
def store(tmp_path):
    opened = fresh_store("sqlite", tmp_path)
    yield opened
    opened.close()


@pytest.fixture(params=BACKENDS)
def any_store(request, tmp_path):
    opened = fresh_store(request.param, tmp_path)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def vector_suite():
    """One real harness evaluation of the vector-add fixture on the CPU, with the quick protocol."""
    return harness.run(VECTOR_ADD, VECTOR_ADD_SOLUTION, harness.evaluation_options(QUICK, "cpu"))
