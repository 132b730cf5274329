"""A campaign's Ray task asks for the host memory the harness plans for its batch, so a node never runs
more tasks than its memory holds (#30: 16 cases of 042 on one 23 GiB machine were OOM-killed)."""

from __future__ import annotations

import json
import random
import secrets
from pathlib import Path

import pytest

from kernelindex.formats.problem import load_problem
from kernelindex.harness import memory
from kernelindex.harness.runner import case_layouts, memory_plan
from kernelindex.services import harness_adapter as harness
from kernelindex.services.campaign import batch_memory, task_options

VECTOR_ADD = Path(__file__).resolve().parents[1] / "harness" / "fixtures" / "problems" / "vector_add"
PROTOCOL = {"rounds": 2, "warmup": 1, "iterations": 3, "timeout_s": 60.0}


def _files(sizes: list[int]) -> dict[str, str]:
    files = harness.problem_files(VECTOR_ADD)
    lines = [{"uuid": f"5e1f0e2c-0000-4000-8000-{i:012d}", "axes": {"n": n}} for i, n in enumerate(sizes)]
    return {**files, "workload.jsonl": "".join(json.dumps(line) + "\n" for line in lines)}


def test_the_memory_asked_for_is_the_harness_plan_of_the_batch(tmp_path):
    rng = random.Random(secrets.randbits(64))
    sizes = [rng.randint(1 << 16, 1 << 20) for _ in range(3)]
    files = _files(sizes)
    batch = [f"5e1f0e2c-0000-4000-8000-{i:012d}" for i in (0, 2)]
    need = harness.planned_task_bytes(files, PROTOCOL, "cpu", batch)
    folder = harness.write_problem(files, tmp_path / "problem")
    problem = load_problem(folder)
    options = harness.evaluation_options(PROTOCOL, "cpu", batch)
    layouts = case_layouts(problem, options, [problem.case(u) for u in batch])
    assert need == memory.PROCESSES * memory.PROCESS_BYTES + memory.fit(layouts, 1, None).peak
    assert task_options("cpu", need)["memory"] == need
    # the plan follows the batch: its largest case
    assert harness.planned_task_bytes(files, PROTOCOL, "cpu") >= need
    smallest = min(range(3), key=lambda i: sizes[i])
    one = harness.planned_task_bytes(files, PROTOCOL, "cpu", [f"5e1f0e2c-0000-4000-8000-{smallest:012d}"])
    assert one <= harness.planned_task_bytes(files, PROTOCOL, "cpu")
    # on a GPU the buffers live in its memory: the host holds the processes
    assert harness.planned_task_bytes(files, PROTOCOL, "cuda", batch) == memory.PROCESSES * memory.PROCESS_BYTES
    gpu = task_options("H200", need)
    assert gpu["num_gpus"] == 1 and gpu["resources"] == {"kernelindex_hw_h200": 1}


def test_a_batch_asks_for_its_plan_fitted_to_the_largest_node_and_the_task_runs_that_plan(monkeypatch, tmp_path):
    """No Ray is started: its view of the nodes is made up. A node smaller than the batch wants gets a
    plan on fewer slots; the task granted that plan's bytes fits to the very same layouts."""
    ray = pytest.importorskip("ray")
    rng = random.Random(secrets.randbits(64))
    files = _files([rng.randint(1 << 20, 1 << 22) for _ in range(3)])
    processes = memory.PROCESSES * memory.PROCESS_BYTES
    wanted = harness.planned_task_bytes(files, PROTOCOL, "cpu")
    # a node short of what the batch wants, yet with room for its fewest slots
    node = processes + (wanted - processes) * rng.randint(60, 90) // 100
    nodes = [{"Alive": True, "Resources": {"memory": node}}, {"Alive": False, "Resources": {"memory": 4 * wanted}}]
    monkeypatch.setattr(ray, "nodes", lambda: nodes)
    need = batch_memory(files, PROTOCOL, "cpu", None)
    assert need <= node < wanted  # the node that is down offers nothing
    problem = load_problem(harness.write_problem(files, tmp_path / "problem"))
    plan = memory_plan(problem, harness.evaluation_options(PROTOCOL, "cpu", None, need), 1 << 50)
    assert plan.fitted and need == processes + plan.peak
    assert task_options("cpu", need)["memory"] == need
    nodes[0]["Resources"]["memory"] = processes + 1  # room for the processes, none for a batch's buffers
    with pytest.raises(ValueError, match=r"the largest Ray node offers [\d.]+ GiB .* need [\d.]+ GiB"):
        batch_memory(files, PROTOCOL, "cpu", None)
