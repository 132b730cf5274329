"""Ray, started once for this module (it costs seconds): `kernelindex campaign` survives a worker killed
mid-task and stores the (problem, solution) once; a runner leases several jobs and runs them as Ray tasks."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
from queue_kit import VECTOR_ADD
from typer.testing import CliRunner

from kernelindex.cli import app

pytestmark = pytest.mark.slow
TASK_TITLE = "ray::evaluate_batch"


def _kill_first_running_task(killed: list[int], stop: threading.Event) -> None:
    """Kill (once) the first Ray worker of this test's own Ray that is running a campaign task."""
    while not stop.is_set() and not killed:
        for pid in _descendants(os.getpid()):
            try:
                title = (Path("/proc") / str(pid) / "cmdline").read_bytes()
            except OSError:
                continue
            if title.startswith(TASK_TITLE.encode()):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
        time.sleep(0.05)


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    from kernelindex.services.campaign import start_ray

    start_ray(None, "cpu")  # the campaign command finds it running and uses it
    yield ray
    ray.shutdown()


def test_campaign_survives_a_killed_worker_and_stores_once(tmp_path, local_ray):
    solution = tmp_path / "solution.json"
    solution.write_text(
        json.dumps(
            {
                "name": "vector_add_slow",
                "definition": "vector_add_f32",
                "spec": {"languages": ["pytorch"], "entry_point": "add.py::run", "destination_passing_style": True},
                "sources": [
                    {
                        "path": "add.py",
                        "content": "import time\n\nimport torch\n\n\ndef run(x, y, z):\n"
                        "    time.sleep(0.3)\n    torch.add(x, y, out=z)\n",
                    }
                ],
            }
        )
    )
    db = tmp_path / "campaign.db"
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_first_running_task, args=(killed, stop), daemon=True)
    killer.start()
    try:
        result = CliRunner().invoke(
            app,
            [
                "campaign",
                str(VECTOR_ADD),
                "--solutions",
                str(solution),
                "--batch",
                "1",
                "--rounds",
                "1",
                "--warmup",
                "1",
                "--iterations",
                "3",
                "--db",
                str(db),
            ],
        )
    finally:
        stop.set()
        killer.join()
    assert result.exit_code == 0, result.output
    assert killed, "no campaign task was seen running"
    from sqlalchemy import func, select

    from kernelindex.store import open_store
    from kernelindex.store.tables import runs

    store = open_store(str(db))
    with store.engine.connect() as conn:
        statuses = conn.execute(select(runs.c.status, func.count()).group_by(runs.c.status)).all()
    store.close()
    assert statuses == [("passed", 3)]  # two cases and the suite, once: the killed attempt left nothing
    assert re.search(r"sha256:[0-9a-f]{64}", result.output)  # the summary names the stored suite run, whole


def test_a_folder_of_solutions_runs_in_one_call_per_batch_and_each_is_stored_apart(tmp_path, local_ray):
    """Both solutions of the folder go to one task per batch (one harness call: a suite each, one nonce),
    the wrong one's failure stays its own, and each is stored with its own verdicts."""
    folder = tmp_path / "candidates"
    folder.mkdir()
    for name, body in [("right", "    torch.add(x, y, out=z)\n"), ("zeros", "    z.zero_()\n")]:
        doc = {
            "name": name,
            "definition": "vector_add_f32",
            "spec": {"languages": ["pytorch"], "entry_point": "add.py::run", "destination_passing_style": True},
            "sources": [{"path": "add.py", "content": "import torch\n\n\ndef run(x, y, z):\n" + body}],
        }
        (folder / f"{name}.json").write_text(json.dumps(doc))
    db = tmp_path / "campaign.db"
    quick = ["--batch", "2", "--rounds", "1", "--warmup", "1", "--iterations", "2"]
    result = CliRunner().invoke(app, ["campaign", str(VECTOR_ADD), "--solutions", str(folder), *quick, "--db", str(db)])
    assert result.exit_code == 1, result.output  # one of them failed
    from sqlalchemy import func, select

    from kernelindex.store import open_store
    from kernelindex.store.tables import runs

    store = open_store(str(db))
    with store.engine.connect() as conn:
        statuses = conn.execute(select(runs.c.status, func.count()).group_by(runs.c.status).order_by(runs.c.status))
        statuses = statuses.all()
    store.close()
    assert statuses == [("incorrect_numerical", 3), ("passed", 3)]  # two cases and a suite run each
    assert len(re.findall(r"sha256:[0-9a-f]{64}", result.output)) == 2, result.output


def test_a_runner_runs_its_leased_jobs_as_ray_tasks(store, local_ray):
    from queue_kit import QUICK, vector_add_submission

    from kernelindex.records.signing import new_private_key, public_key_to_text
    from kernelindex.services import queue as service
    from kernelindex.services.remote_runner import connect, run_on_ray
    from kernelindex.store.reads import queue as reads
    from kernelindex.web.app import create_app
    from live_kit import serving

    first = service.submit(store, vector_add_submission())
    second = service.submit(store, vector_add_submission(protocol={**QUICK, "iterations": 4}))
    private_key = new_private_key()
    service.register_runner(
        store, public_key_to_text(private_key.public_key()), label="ray", machine="cluster", hardware="cpu"
    )
    with serving(create_app(store=store)) as url:
        client = connect(url, private_key)
        outcomes = run_on_ray(client, "cpu", jobs=4)
        client.close()
    assert sorted(o.request for o in outcomes) == sorted([first, second])
    assert all(o.accepted and o.request_state == "done" for o in outcomes), [o.detail for o in outcomes]
    with store.engine.connect() as conn:
        assert {reads.request_row(conn, r).state for r in (first, second)} == {"done"}


def test_a_task_holds_the_memory_its_plan_needs_and_a_plan_no_node_holds_is_refused(local_ray):
    """While a batch's task runs, Ray has set aside exactly the plan's bytes of the node's memory; a plan
    larger than any node is refused up front (Ray would keep such a task pending for ever)."""
    from queue_kit import QUICK, VECTOR_ADD_SOLUTION

    from kernelindex.services import harness_adapter as harness
    from kernelindex.services.campaign import batch_memory, task_for

    files = harness.problem_files(VECTOR_ADD)
    cases = harness.problem_summary(files)[1][:1]
    need = batch_memory(files, QUICK, "cpu", cases)
    total = local_ray.cluster_resources()["memory"]
    assert need == harness.planned_task_bytes(files, QUICK, "cpu", cases, int(total)) <= total
    first = json.loads(files["workload.jsonl"].splitlines()[0])
    huge = {**files, "workload.jsonl": json.dumps({**first, "axes": {"n": 1 << 36}}) + "\n"}  # 256 GiB a tensor
    with pytest.raises(ValueError, match="the largest Ray node offers"):
        batch_memory(huge, QUICK, "cpu", cases)
    solution = harness.inline_solution(VECTOR_ADD_SOLUTION)
    ref = task_for("cpu", need).remote(files, [solution], QUICK, "cpu", cases, need)
    held = []
    while not local_ray.wait([ref], timeout=0.05)[0]:
        held.append(total - local_ray.available_resources().get("memory", 0))
    assert local_ray.get(ref)[0].cases[0].passed
    assert need in held  # what Ray set aside while the task ran is the plan, to the byte
