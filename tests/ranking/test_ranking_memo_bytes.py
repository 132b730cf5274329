"""The per-process memo of ranked groups is bounded by the bytes its groups hold, counted object by
object (raw samples included), not by how many groups it keeps."""

from __future__ import annotations

import random
import sys
import tracemalloc

import pytest

from kernelindex.ranking import memo, memo_budget
from kernelindex.ranking.cohort import RankInput, rank_groups


def _inputs(rng: random.Random, key: str, runs: int, samples: int) -> list[RankInput]:
    return [
        RankInput(
            run_id=f"{key}-run-{i}",
            comparison_key=key,
            status="passed",
            value=rng.uniform(1e3, 1e5),
            metric="latency",
            statistic="median",
            unit="ns",
            samples=tuple(rng.uniform(1e3, 1e5) for _ in range(samples)),
            digest=f"sha256:{i:064x}",
        )
        for i in range(runs)
    ]


def test_a_groups_counted_size_covers_what_it_allocates():
    rng = random.Random(20261202)
    rank_groups(_inputs(rng, "sha256:warm", runs=2, samples=10))  # first use imports and sets up numpy
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    groups = rank_groups(_inputs(rng, "sha256:k", runs=20, samples=500))
    allocated = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    counted = memo._size(groups["sha256:k"])
    assert counted >= 20 * 500 * sys.getsizeof(1.5)  # every sample float is counted
    assert 0.8 * allocated <= counted <= 1.5 * allocated  # the count is what the inputs and ranks hold


def test_the_memo_keeps_within_its_byte_budget(monkeypatch):
    seed = random.randrange(2**32)
    print(f"memo seed: {seed}")
    rng = random.Random(seed)
    budget = 2 * 1024 * 1024
    monkeypatch.setenv(memo_budget.BUDGET_ENV, str(budget))
    monkeypatch.setattr(memo, "_groups", type(memo._groups)())
    monkeypatch.setattr(memo, "_used", 0)
    for n in range(60):
        key = f"sha256:{n:04x}"
        groups = rank_groups(_inputs(rng, key, runs=rng.randint(1, 12), samples=rng.randint(10, 600)))
        memo._keep("store", 1, groups, {k: memo._size(g) for k, g in groups.items()})
        assert memo.kept_bytes() <= budget
        assert memo.kept_bytes() == sum(size for _, _, size in memo._groups.values())
    assert 0 < len(memo._groups) < 60  # it evicted, by bytes, and kept some
    huge = rank_groups(_inputs(rng, "sha256:huge", runs=50, samples=2000))
    memo._keep("store", 1, huge, {k: memo._size(g) for k, g in huge.items()})
    assert ("store", "sha256:huge") not in memo._groups  # past an eighth of the budget: not kept


@pytest.mark.parametrize("samples", [0, 100])
def test_size_counts_shared_objects_once(samples):
    shared = tuple(float(i) + 0.5 for i in range(samples))
    pair = (shared, shared)
    assert memo._size(pair) == sys.getsizeof(pair) + memo._size(shared)
