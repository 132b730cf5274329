"""Finding a run or a workload from what a person pastes into a URL.

The same rule as ``kernelindex show``: an id, a full digest, or a digest prefix of 8 or more hex
characters (with or without ``sha256:``) that names exactly one record. Runs go through the store's
own :func:`find_run_id`; the web layer only turns its refusal into the right HTTP problem:
ambiguous prefix 409 (with the number of candidates), prefix too short 400, nothing found 404.
"""

from __future__ import annotations

import re

from sqlalchemy import Connection, Table, func, select

from kernelindex.records.slugs import slugify
from kernelindex.store.queries import HEX_PREFIX, UUID, LookupProblem, find_run_id
from kernelindex.store.tables import runs, workloads
from kernelindex.web.deps import not_found
from kernelindex.web.problems import Problem
from kernelindex.web.queries import find_operation

SHORT_HEX = re.compile(r"^(sha256:)?[0-9a-f]{1,7}$")
FULL_DIGEST = re.compile(r"^(sha256:)?([0-9a-f]{64})$")
MIN_PREFIX = 8


def _refusal(conn: Connection, table: Table, digest_column: str, what: str, text: str) -> Problem:
    """Why ``text`` names no single record of ``table``: too short, ambiguous, or unknown."""
    lowered = text.lower()
    if SHORT_HEX.match(lowered):
        return Problem(400, "digest-prefix-too-short",
                       f"{text!r} is too short to name a {what}: give its id, its digest, or at least "
                       f"{MIN_PREFIX} hex characters of its digest", resource=what, minimumPrefix=MIN_PREFIX)
    match = HEX_PREFIX.match(lowered)
    if match and len(match.group(2)) < 64:
        column = table.c[digest_column]
        count = conn.scalar(select(func.count()).select_from(table)
                            .where(column.like(f"sha256:{match.group(2)}%"))) or 0
        if count > 1:
            return Problem(409, "ambiguous-digest-prefix",
                           f"digest prefix {text!r} matches {count} {what}s; give more characters",
                           resource=what, candidates=count)
    return not_found(what, text)


def run_row(conn: Connection, ident: str):
    """The run row ``ident`` names, or a :class:`Problem`."""
    text = ident.strip()
    if full := FULL_DIGEST.match(text.lower()):  # the common case: one lookup on the unique column
        row = conn.execute(select(runs).where(runs.c.run_digest == "sha256:" + full.group(2))).first()
        if row is None:
            raise not_found("run", text)
        return row
    try:
        run_id = find_run_id(conn, text)
    except LookupProblem:
        raise _refusal(conn, runs, "run_digest", "run", text) from None
    return conn.execute(select(runs).where(runs.c.id == run_id)).first()


def workload_row(conn: Connection, ident: str):
    """The workload row ``ident`` names (id, digest or unique 8+ hex prefix), or a :class:`Problem`."""
    text = ident.strip()
    lowered = text.lower()
    if UUID.match(lowered):
        row = conn.execute(select(workloads).where(workloads.c.id == lowered)).first()
    elif full := FULL_DIGEST.match(lowered):
        row = conn.execute(select(workloads).where(workloads.c.workload_digest == "sha256:" + full.group(2))).first()
    elif match := HEX_PREFIX.match(lowered):
        found = conn.execute(select(workloads).where(
            workloads.c.workload_digest.like(f"sha256:{match.group(2)}%")).limit(2)).all()
        row = found[0] if len(found) == 1 else None
    else:
        row = None
    if row is None:
        raise _refusal(conn, workloads, "workload_digest", "workload", text)
    return row


def operation_row(conn: Connection, slug: str):
    """The operation ``slug`` names (slug, alias or name, as the store finds it), or a 404 :class:`Problem`."""
    row = find_operation(conn, slug)
    if row is None and slugify(slug) != slug:  # stores made before slugs were one spelling: 042_moe_… → 042-moe-…
        row = find_operation(conn, slugify(slug))
    if row is None:
        raise not_found("operation", slug)
    return row
