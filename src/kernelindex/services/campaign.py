"""A verification campaign on Ray: every (problem, batch of cases) is one Ray task that runs all of
the problem's solutions in one harness call (`runner.evaluate_many`: the reference once per case,
each solution in sandboxes of its own, a suite result each).

Ray does the scheduling: a task asks for one CPU, one GPU when the hardware is a GPU product,
one unit of a custom resource naming the product (``kernelindex_hw_h200``), so it only
lands on nodes started with that resource, and the host memory the harness plans for its cases
(``memory``), so Ray never starts more tasks on a node than its memory holds; ``max_retries`` reruns a task whose worker or node
died. Tasks return suite results as object refs; the driver collects them with ``ray.wait`` as
they finish, merges the batches of each (problem, solution) and stores them through the one
writer. Workers never open the store.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.services import harness_adapter as harness

MAX_RETRIES = 3


def resource_name(hardware: str) -> str:
    """The custom Ray resource that stands for a hardware product on a node (`kernelindex_hw_h200`)."""
    return "kernelindex_hw_" + (re.sub(r"[^a-z0-9]+", "_", hardware.lower()).strip("_") or "cpu")


@dataclass
class Pair:
    """One (problem, solution) of a campaign, as data a worker can rebuild anywhere."""

    problem_files: dict[str, str]
    solution: dict[str, Any]
    cases: list[str]
    name: str = ""
    parts: list[Any] = field(default_factory=list)
    failure: str | None = None
    stored: tuple[str, list[str]] | None = None


def evaluate_batch(
    problem_files: dict[str, str],
    solutions: list[dict[str, Any]],
    protocol: dict[str, Any],
    device: str,
    cases: list[str] | None,
    memory_bytes: int | None = None,
) -> list:
    """A Ray task body: rebuild the job in a scratch folder, run these cases of every solution in one
    call within the ``memory_bytes`` the task was granted (its memory plan the driver's), return a suite
    result per solution, in order."""
    with tempfile.TemporaryDirectory(prefix="kernelindex-campaign-") as tmp:
        problem_dir = harness.write_problem(problem_files, Path(tmp) / "problem")
        paths = [harness.write_solution(doc, Path(tmp) / f"solution-{n}") for n, doc in enumerate(solutions)]
        options = harness.evaluation_options(protocol, device, cases, memory_bytes)
        return harness.run_many(problem_dir, paths, options)


def batches(cases: list[str], size: int) -> list[list[str]]:
    return [cases[i : i + size] for i in range(0, len(cases), size)]


class RayUnavailable(Refusal, RuntimeError):
    """The Ray cluster named by ``--ray-address`` cannot be joined."""

    kind = RefusalKind.UNAVAILABLE


def start_ray(address: str | None, hardware: str) -> None:
    """Join the cluster at ``address``, or start a local Ray with two CPUs standing in for the product."""
    import ray

    if ray.is_initialized():
        return
    if address:
        try:
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
        except (ConnectionError, ValueError) as exc:
            raise RayUnavailable(f"no Ray cluster at {address}: {str(exc).splitlines()[0]}") from exc
    else:
        ray.init(
            num_cpus=2,
            resources={resource_name(hardware): 2},
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
            # A task killed by Ray's memory monitor is retried apart from max_retries, without end
            # by default: a case too big for this machine would stall the campaign instead of failing.
            _system_config={"task_oom_retries": MAX_RETRIES},
        )


def device_for(hardware: str) -> str:
    """The device a worker evaluates on for ``hardware``."""
    return "cpu" if hardware == "cpu" else "cuda"


def task_options(hardware: str, memory_bytes: int) -> dict[str, Any]:
    """What a task evaluating a batch asks Ray for: a CPU, the product's GPU and resource, and the host
    memory the batch's plan needs (``harness.planned_task_bytes``)."""
    return {
        "name": "evaluate_batch",
        "num_cpus": 1,
        "num_gpus": 0 if hardware == "cpu" else 1,
        "resources": {resource_name(hardware): 1},
        "memory": memory_bytes,
        "max_retries": MAX_RETRIES,
        "retry_exceptions": False,
    }


def task_for(hardware: str, memory_bytes: int):
    """The Ray task that evaluates one batch on ``hardware`` with ``memory_bytes`` of host memory."""
    import ray

    return ray.remote(evaluate_batch).options(**task_options(hardware, memory_bytes))


def batch_memory(files: dict[str, str], protocol: dict[str, Any], device: str, cases: list[str] | None) -> int:
    """The host memory a batch's task asks for: the harness's plan of its cases fitted to the largest live
    Ray node's memory (fewer slots, streamed rounds), so Ray can always place it and never over-commits a
    node. Raises ValueError, with the figures, where no node can hold it (Ray would keep it pending for ever)."""
    import ray

    from kernelindex.harness.memory import GIB, DoesNotFit

    largest = int(max((n["Resources"].get("memory", 0) for n in ray.nodes() if n.get("Alive")), default=0))
    offer = f"the largest Ray node offers {largest / GIB:.1f} GiB of host memory"
    try:
        need = harness.planned_task_bytes(files, protocol, device, cases, largest)
    except DoesNotFit as exc:
        raise ValueError(f"{offer}: {exc}") from None
    if need > largest:
        raise ValueError(f"a batch needs {need / GIB:.1f} GiB of host memory by the harness's plan, {offer}")
    return need


def run_campaign(
    pairs: list[Pair],
    *,
    hardware: str,
    protocol: dict[str, Any],
    batch_size: int,
    store_pair: Callable[[Pair, Any], None],
    advance: Callable[[int], None],
) -> None:
    """Fan each problem's case batches out as Ray tasks, every task running all the solutions of that
    problem that share those cases; store each pair once all its batches are back."""
    import ray
    from ray.exceptions import RayError

    device = device_for(hardware)
    owner: dict[Any, tuple[list[Pair], int]] = {}
    groups: dict[tuple[str, tuple[str, ...]], list[Pair]] = {}
    for pair in pairs:
        groups.setdefault((json.dumps(pair.problem_files, sort_keys=True), tuple(pair.cases)), []).append(pair)
    for group in groups.values():
        first = group[0]
        try:
            plans = [
                (b, batch_memory(first.problem_files, protocol, device, b)) for b in batches(first.cases, batch_size)
            ]
        except ValueError as exc:  # refused before any of its batches starts
            for pair in group:
                pair.failure = str(exc)
            advance(len(first.cases) * len(group))
            continue
        problem_ref, solutions_ref = ray.put(first.problem_files), ray.put([pair.solution for pair in group])
        for batch, need in plans:
            task = task_for(hardware, need)
            owner[task.remote(problem_ref, solutions_ref, protocol, device, batch, need)] = (group, len(batch))
    expected = {id(pair): len(batches(pair.cases, batch_size)) for pair in pairs}
    pending = list(owner)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        group, count = owner[done[0]]
        try:
            suites = ray.get(done[0])
        except RayError as exc:
            for pair in group:
                pair.failure = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            suites = []
        for pair, suite in zip(group, suites):
            pair.parts.append(suite)
        advance(count * len(group))
        for pair in group:
            if len(pair.parts) == expected[id(pair)] and pair.failure is None:
                try:
                    merged = harness.merge(pair.parts)
                except ValueError as exc:
                    pair.failure = str(exc)
                    continue
                store_pair(pair, merged)
