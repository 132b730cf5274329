"""A timed pair's empty batches, before it and after it, are each the quickest of PROBES runs: a one-off
stall of the machine in one run is neither subtracted from the pair's figures nor read as load that
disturbed the pair (which would run it again)."""

from __future__ import annotations

import random
import secrets

from harness_testkit import problem, quick, solution

from kernelindex.harness import runner
from kernelindex.harness.runner import evaluate

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"
STALL_NS = 50_000_000  # far past any empty batch of this problem


def test_a_stall_in_one_empty_batch_is_never_the_one_kept(monkeypatch):
    rng = random.Random(secrets.randbits(32))
    empty_batch, timed_pair = runner._CaseRun._empty_batch, runner._CaseRun._timed_pair
    runs: list[tuple[int, bool]] = []  # the current attempt's empty batches: (ns, stalled)
    attempts = []  # per timed attempt: its empty batches in order, and the pair it made

    def probed(run, size):
        took = empty_batch(run, size)
        if not in_pair:
            return took
        stalled = len(runs) % runner.PROBES == stall_at[len(runs) // runner.PROBES]
        runs.append((took + STALL_NS if stalled else took, stalled))
        return runs[-1][0]

    def paired(run, *args):
        nonlocal in_pair, stall_at
        runs.clear()
        in_pair, stall_at = True, [rng.randrange(runner.PROBES) for _ in range(2)]
        try:
            made = timed_pair(run, *args)
        finally:
            in_pair = False
        attempts.append((list(runs), made))
        return made

    in_pair, stall_at = False, [0, 0]
    monkeypatch.setattr(runner._CaseRun, "_empty_batch", probed)
    monkeypatch.setattr(runner._CaseRun, "_timed_pair", paired)
    (result,) = evaluate(problem("vector_add"), solution("vector_add_torch"), quick(cases=[FIRST])).cases
    assert result.status == "PASSED", result.log
    assert attempts and len(attempts) >= len(result.pairs) == quick().pair_count
    for taken, pair in attempts:
        assert len(taken) == 2 * runner.PROBES and sum(stalled for _, stalled in taken) == 2
        before, after = taken[: runner.PROBES], taken[runner.PROBES :]
        assert pair.empty_batches_ns == [min(ns for ns, _ in before), min(ns for ns, _ in after)]
        assert all(ns < STALL_NS for ns in pair.empty_batches_ns)  # no stalled run was kept
