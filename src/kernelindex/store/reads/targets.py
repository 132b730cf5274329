"""What a person pastes into ``kernelindex rank`` (or a URL): a workload or comparison group named by
id, digest, digest prefix (8+ hex, as ``runs`` and ``show`` print), workload name, or a run's digest
prefix (meaning that run's workload)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import Connection, and_, select

from kernelindex.store.tables import runs, workloads

HEX = re.compile(r"^(?:sha256:)?([0-9a-f]{8,64})$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
CANDIDATES = 5


@dataclass(frozen=True)
class Target:
    workload_id: str | None = None
    comparison_key: str | None = None
    via: str = ""  # how the text was read, said back to the user
    problem: str | None = None  # why nothing (or too much) matched


def _starts(column, hexpart: str):
    low = "sha256:" + hexpart
    return and_(column >= low, column < low + "\uffff")


def resolve_target(conn: Connection, text: str) -> Target:
    """The workload or group ``text`` names, or a :class:`Target` whose ``problem`` says why not."""
    text = text.strip()
    lowered = text.lower()
    if UUID.match(lowered) and conn.scalar(select(workloads.c.id).where(workloads.c.id == lowered)):
        return Target(workload_id=lowered, via="workload id")
    by_name = conn.scalars(select(workloads.c.id).where(workloads.c.name == text).limit(CANDIDATES)).all()
    if len(by_name) == 1:
        return Target(workload_id=by_name[0], via="workload name")
    if len(by_name) > 1:
        return Target(problem=f"{len(by_name)} workloads are named {text!r}; give a digest prefix instead")
    match = HEX.match(lowered)
    if not match:
        return Target(problem=f"{text!r} is not a workload id, workload name, digest or 8+ hex digest prefix")
    hexpart = match.group(1)
    found_wl = conn.scalars(select(workloads.c.id).where(_starts(workloads.c.workload_digest, hexpart))
                            .limit(CANDIDATES)).all()
    found_keys = conn.scalars(select(runs.c.comparison_key).distinct()
                              .where(_starts(runs.c.comparison_key, hexpart)).limit(CANDIDATES)).all()
    found_runs = conn.execute(select(runs.c.workload_id, runs.c.run_digest).where(_starts(runs.c.run_digest, hexpart))
                              .limit(CANDIDATES)).all()
    hits = len(found_wl) + len(found_keys) + len(found_runs)
    if hits == 0:
        return Target(problem=f"no workload, comparison group or run digest starts with {hexpart}")
    if hits > 1:
        return Target(problem=f"digest prefix {hexpart} matches {hits if hits < CANDIDATES else 'several'} "
                              "workloads, groups or runs; give more characters")
    if found_wl:
        return Target(workload_id=found_wl[0], via="workload digest prefix")
    if found_keys:
        return Target(comparison_key=found_keys[0], via="comparison key prefix")
    workload_id, run_digest = found_runs[0]
    if workload_id is None:
        return Target(problem=f"run {run_digest} has no stored workload yet, so it has no comparison group")
    return Target(workload_id=workload_id, via=f"the workload of run {run_digest}")
