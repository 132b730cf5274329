"""`kernelindex campaign` on a local Ray: a worker killed mid-task is retried by Ray, and the driver
stores the (problem, solution) once. One test, because starting Ray costs seconds."""

from __future__ import annotations

import json
import os
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


def test_campaign_survives_a_killed_worker_and_stores_once(tmp_path):
    ray = pytest.importorskip("ray")
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
        ray.shutdown()
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
    assert "sha256:" in result.output  # the summary table names the stored suite run
