"""Ranking over the store: load a group's runs as plain :class:`RankInput` and rank them.

Pages, the JSON API and ``kernelindex rank`` all come through here and :func:`rank_group`, so
the three never disagree about a rank, a tie or an exclusion.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kernelindex.ranking import memo
from kernelindex.ranking.cohort import RankedGroup, RankInput, rank_group
from kernelindex.store.reads.ranking import rank_rows, raw_sample_contents, workload_comparison_keys
from kernelindex.store.reads.run_facts import retracted_by_event, superseded_ids

if TYPE_CHECKING:
    from sqlalchemy import Connection


def _load(content: bytes | None):
    if not content:
        return None
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


def parse_samples(content: bytes | None) -> tuple[float, ...] | None:
    """Raw timing samples stored as JSON: a list of numbers, ``{"samples": [...]}``, or the harness's
    ``{"solution": [...], "reference": [...], ...}`` (the solution's per-call figures)."""
    data = _load(content)
    if isinstance(data, dict):
        data = data.get("samples") or data.get("latencyNs") or data.get("solution")
    if not isinstance(data, list) or not data or not all(isinstance(x, (int, float)) for x in data):
        return None
    return tuple(float(x) for x in data)


def parse_flags(content: bytes | None) -> tuple[str, ...]:
    """The harness's flags in its raw samples (``{"flags": ["unstable", ...]}``), else none."""
    data = _load(content)
    flags = data.get("flags") if isinstance(data, dict) else None
    return tuple(sorted(str(f) for f in flags)) if isinstance(flags, list) else ()


def _samples(conn: Connection, run_ids: Sequence[str]) -> dict[str, tuple[tuple[float, ...] | None, tuple[str, ...]]]:
    """Per run: its raw timing samples (if any) and the harness's flags on them."""
    out = {}
    for run_id, content in raw_sample_contents(conn, run_ids):
        parsed, flags = parse_samples(content), parse_flags(content)
        if parsed or flags:
            out[run_id] = (parsed, flags)
    return out


def rank_inputs(
    conn: Connection, keys: Iterable[str] | None = None, *, workload_id: str | None = None
) -> list[RankInput]:
    """Every run of the given comparison groups (or of every group of one workload), as ranking input."""
    if workload_id is not None:
        # The key includes the workload, so the workload's groups are exactly its keys' runs; both
        # reads are index-only (ix_runs_workload_key, then ix_runs_rank_cover).
        keys = workload_comparison_keys(conn, workload_id)
    keys = sorted(set(keys or ()))
    if not keys:
        return []
    rows = rank_rows(conn, keys)
    superseded = superseded_ids(conn)
    retracted = retracted_by_event(conn)  # few: read whole rather than as a long IN list
    samples = _samples(conn, [r[0] for r in rows if r[-1]])  # has_raw_evidence
    return [
        RankInput(
            run_id,
            key,
            status,
            value,
            metric,
            statistic,
            unit,
            observed,
            run_id in retracted,
            run_id in superseded,
            samples.get(run_id, (None, ()))[0],
            digest,
            samples.get(run_id, (None, ()))[1],
        )
        for (run_id, digest, key, status, value, metric, statistic, unit, observed, _raw) in rows
    ]


def _rank_by_key(inputs: list[RankInput]) -> dict[str, RankedGroup]:
    by_key: dict[str, list[RankInput]] = {}
    for run in inputs:
        by_key.setdefault(run.comparison_key, []).append(run)
    return {key: rank_group(group) for key, group in sorted(by_key.items())}


def ranked_groups(conn: Connection, keys: Iterable[str]) -> dict[str, RankedGroup]:
    """Each comparison group ranked; a group in ``keys`` with no runs is left out. Kept per store
    generation (:mod:`kernelindex.ranking.memo`), so pages of one group rank it once."""
    return memo.ranked_groups(conn, keys, lambda missing: _rank_by_key(rank_inputs(conn, missing)))


def workload_groups(conn: Connection, workload_id: str) -> dict[str, RankedGroup]:
    """Every comparison group of one workload, ranked (the key includes the workload)."""
    return _rank_by_key(rank_inputs(conn, workload_id=workload_id))


def ranked_group(conn: Connection, key: str) -> RankedGroup | None:
    return ranked_groups(conn, [key]).get(key)
