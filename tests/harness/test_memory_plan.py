"""A case whose buffers cannot fit is refused before any process starts, with the figures; one that fits runs."""

from __future__ import annotations

import math
import random
import secrets
import tempfile
from pathlib import Path

import pytest
from harness_testkit import problem, quick, solution

from kernelindex.harness import memory
from kernelindex.harness.arena import Layout
from kernelindex.harness.runner import evaluate

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"


def _layout(slots: int) -> Layout:
    vector_add = problem("vector_add")
    return Layout.build(vector_add.definition, vector_add.case(FIRST), slots)


def test_the_plan_counts_both_arenas_the_pristine_inputs_a_call_of_outputs_and_their_check():
    rng = random.Random(secrets.randbits(64))
    slots = rng.randint(2, 40)
    layout = _layout(slots)
    inputs = sum(memory._nbytes(e.shape, e.dtype) for e in layout.inputs if not e.is_scalar)
    outputs = sum(memory._nbytes(e.shape, e.dtype) for e in layout.outputs)
    check = memory.CHECK_BYTES_PER_ELEMENT * max(math.prod(e.shape) for e in layout.outputs)  # the parent's check
    reference = layout.total_bytes * rng.randint(1, 3)
    planned = reference + layout.total_bytes + inputs * slots + 2 * outputs + check
    assert memory.planned_bytes(layout, reference) == planned
    assert memory.planned_bytes(_layout(slots + 1), reference) > memory.planned_bytes(layout, reference)


def test_a_case_over_the_available_memory_is_refused_with_its_figures():
    layout = _layout(12)
    need = memory.planned_bytes(layout, layout.total_bytes)
    memory.check_fits({FIRST: layout}, layout.total_bytes, need)  # exactly enough: no refusal
    memory.check_fits({FIRST: layout}, layout.total_bytes, None)  # nothing to read: not checked
    with pytest.raises(memory.DoesNotFit) as refused:
        memory.check_fits({FIRST: layout}, layout.total_bytes, need - 1)
    assert FIRST[:8] in str(refused.value) and "GiB available" in str(refused.value)


def test_evaluate_refuses_before_any_process_starts_and_leaves_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the session's folder lands here, alone
    monkeypatch.setattr(memory, "available_bytes", lambda: 4096)
    with pytest.raises(memory.DoesNotFit):
        evaluate(problem("vector_add"), solution("vector_add_torch"), quick(cases=[FIRST]))
    assert list(Path(tmp_path).glob("kernelindex-eval-*")) == []  # (a staging folder of the sandbox may stay)


def test_the_machines_available_memory_is_read():
    available = memory.available_bytes()
    assert available is None or available > 0
