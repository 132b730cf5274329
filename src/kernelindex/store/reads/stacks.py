"""The software stack each run was measured on, as one short label (``evaluation_stack v1.1``,
``pytorch 2.13.0, triton 3.9.0``), so a listing can say when it mixes stacks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from kernelindex.store.tables import environments, runs

SHOWN_LIBRARIES = ("torch", "triton", "cuda", "rocm", "evaluation_stack", "cutlass", "cudnn")


def stack_label(software: dict[str, Any] | None) -> str:
    """A short, stable label of an environment's software (empty dict: ``unstated``)."""
    software = software or {}
    parts = []
    framework = software.get("framework") or {}
    if isinstance(framework, dict) and framework.get("name"):
        parts.append(f"{framework['name']} {framework.get('version', '')}".strip())
    for key in ("driver", "cuda", "rocm"):
        if isinstance(software.get(key), (str, int, float)):
            parts.append(f"{key} {software[key]}")
    libraries = software.get("libraries") or {}
    if isinstance(libraries, dict):
        parts += [f"{name} {libraries[name]}" for name in SHOWN_LIBRARIES if name in libraries]
    return ", ".join(parts) or "unstated"


def stacks_of_runs(conn: Connection, run_ids: Sequence[str]) -> dict[str, str]:
    """Run id → the label of its environment's software stack."""
    if not run_ids:
        return {}
    query = (
        select(runs.c.id, environments.c.manifest["spec"]["software"].label("software"))
        .join(environments, environments.c.environment_digest == runs.c.environment_key)
        .where(runs.c.id.in_(sorted(set(run_ids))))
    )
    return {r.id: stack_label(r.software) for r in conn.execute(query)}
