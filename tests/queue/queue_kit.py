"""Helpers of the queue tests: stores on both databases, registered runner keys, quick submissions."""

from __future__ import annotations

from pathlib import Path

from kernelindex.records.signing import key_id, new_private_key, public_key_to_text
from kernelindex.services import harness_adapter as harness
from kernelindex.services import queue as service
from kernelindex.store import open_store
from store_fixtures import database_url

FIXTURES = Path(__file__).resolve().parents[1] / "harness" / "fixtures"
VECTOR_ADD = FIXTURES / "problems" / "vector_add"
VECTOR_ADD_SOLUTION = FIXTURES / "solutions" / "vector_add_torch" / "solution.json"
QUICK = {"rounds": 2, "warmup": 1, "iterations": 3, "timeout_s": 120}


def fresh_store(kind: str, folder: Path):
    return open_store(database_url(kind, folder, migrated=True))


def register(store, name: str, hardware: str = "cpu", machine: str | None = None):
    """A new runner key registered for ``hardware``; returns (private key, key id)."""
    private_key = new_private_key()
    service.register_runner(
        store,
        public_key_to_text(private_key.public_key()),
        label=name,
        machine=machine or f"host-{name}",
        hardware=hardware,
    )
    return private_key, key_id(private_key.public_key())


def vector_add_submission(**overrides) -> service.Submission:
    values = dict(
        solution=harness.inline_solution(VECTOR_ADD_SOLUTION),
        problem_files=harness.problem_files(VECTOR_ADD),
        protocol=dict(QUICK),
    )
    values.update(overrides)
    return service.Submission(**values)


def counts(store) -> dict[str, int]:
    """Rows per table that a refused operation must leave as they were."""
    from sqlalchemy import func, select

    from kernelindex.store.queue.tables import rerun_leases, rerun_requests
    from kernelindex.store.tables import artifacts, runs

    with store.engine.connect() as conn:
        return {
            t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (rerun_requests, rerun_leases, artifacts, runs)
        }
