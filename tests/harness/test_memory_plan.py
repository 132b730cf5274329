"""The memory plan fits an evaluation to the machine (fewer slots, the checked rounds streamed through
them) or refuses it before any process starts, with the figures; a fitted evaluation still checks every
round. Machine sizes here are made up, so nothing depends on what this machine has free."""

from __future__ import annotations

import random
import secrets
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from harness_testkit import problem, quick, solution, write_solution

from kernelindex.harness import memory, runner
from kernelindex.harness.arena import Layout
from kernelindex.harness.runner import case_layouts, evaluate, evaluate_many, memory_plan

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"
RNG = random.Random(secrets.randbits(64))


def _layout(slots: int, case: str = FIRST) -> Layout:
    vector_add = problem("vector_add")
    return Layout.build(vector_add.definition, vector_add.case(case), slots)


def _budget_for(layout: Layout, slots: int) -> int:
    """The buffer budget at which ``layout``, alone, fits with exactly ``slots`` slots."""
    fitted = replace(layout, slots=slots)
    return memory.planned_bytes(fitted, fitted.total_bytes)


def test_the_plan_counts_both_arenas_the_pristine_inputs_and_a_call_of_outputs():
    slots = RNG.randint(2, 40)
    layout = _layout(slots)
    inputs = sum(memory._nbytes(e.shape, e.dtype) for e in layout.inputs if not e.is_scalar)
    outputs = sum(memory._nbytes(e.shape, e.dtype) for e in layout.outputs)
    reference = layout.total_bytes * RNG.randint(1, 3)
    compare = 10 * 4 * max(e.shape[0] for e in layout.outputs)  # the f32 output, upcast and compared
    assert memory.compare_bytes(layout) == compare
    assert memory.planned_bytes(layout, reference) == (
        reference + layout.total_bytes + inputs * slots + 2 * outputs + compare
    )
    assert memory.planned_bytes(_layout(slots + 1), reference) > memory.planned_bytes(layout, reference)


def test_with_memory_to_spare_every_case_keeps_the_slots_it_wants():
    wanted = {FIRST: _layout(RNG.randint(6, 30))}
    plan = memory.fit(wanted, 3, memory.planned_bytes(wanted[FIRST], wanted[FIRST].total_bytes), None)
    assert plan.layouts == wanted and plan.fitted == []
    assert memory.fit(wanted, 3, None, None).layouts == wanted  # nothing to read: not checked


def test_a_smaller_machine_gets_the_most_slots_that_fit_never_fewer_than_a_batch():
    want, least = RNG.randint(12, 30), RNG.randint(2, 5)
    wanted = {FIRST: _layout(want)}
    fits = RNG.randint(least, want - 1)
    budget = _budget_for(wanted[FIRST], fits) + RNG.randint(0, _layout(1).slot_bytes)  # short of one more slot
    plan = memory.fit(wanted, least, budget, None)
    assert plan.layouts[FIRST].slots == fits and plan.fitted == [FIRST]
    assert plan.peak <= budget < _budget_for(wanted[FIRST], fits + 1)
    with pytest.raises(memory.DoesNotFit) as refused:
        memory.fit(wanted, least, _budget_for(wanted[FIRST], least) - 1, None)
    text = str(refused.value)
    need = _budget_for(wanted[FIRST], least)
    assert FIRST[:8] in text and f"need {need / memory.GIB:.1f} GiB" in text and "this machine has" in text


def test_the_largest_arena_shrinks_first_since_it_sizes_the_reference_arena_of_every_case():
    small, large = FIRST, "3a1f0e2c-0000-4000-8000-000000000002"
    wanted = {small: _layout(20, small), large: _layout(20, large)}
    assert wanted[large].slot_bytes > wanted[small].slot_bytes
    budget = memory.fit(wanted, 1, None).peak * RNG.randint(60, 90) // 100
    plan = memory.fit(wanted, 2, budget, None)
    assert plan.peak <= budget and plan.layouts[large].slots < 20
    assert plan.reference_bytes == max(layout.total_bytes for layout in plan.layouts.values())
    assert all(plan.need(u) <= budget for u in plan.layouts)


def test_no_arena_over_what_a_child_may_map_under_its_memory_cap():
    wanted = {FIRST: _layout(RNG.randint(10, 20))}
    cap = wanted[FIRST].slot_bytes * 7 + 1
    assert memory.fit(wanted, 2, None, cap).layouts[FIRST].slots == 7
    with pytest.raises(memory.DoesNotFit, match="raise --memory-mb"):
        memory.fit(wanted, 8, None, cap)


def test_the_grant_of_a_task_and_the_machine_both_bound_the_buffers():
    available, granted = (RNG.randint(4, 64) << 30 for _ in range(2))
    assert memory.buffer_budget(available, None) == available - 2 * memory.PROCESS_BYTES
    assert memory.buffer_budget(None, granted) == granted - 3 * memory.PROCESS_BYTES
    assert memory.buffer_budget(available, granted) == min(
        available - 2 * memory.PROCESS_BYTES, granted - 3 * memory.PROCESS_BYTES
    )
    assert memory.buffer_budget(None, None) is None


def test_a_plan_for_a_task_is_the_same_plan_on_the_worker_given_its_grant():
    """The driver fits a batch to a node's memory and asks for the plan's bytes; the worker, given those bytes
    as its grant, fits to the very same layouts."""
    vector_add = problem("vector_add")
    options = quick(rounds=12)
    wanted = case_layouts(vector_add, options, vector_add.cases)
    node = memory.PROCESSES * memory.PROCESS_BYTES + memory.fit(wanted, 1, None).peak * RNG.randint(40, 80) // 100
    driver = memory_plan(vector_add, replace(options, memory_budget_bytes=node), None)
    need = memory.task_bytes(driver, "cpu")
    assert need <= node and driver.fitted
    worker = memory_plan(vector_add, replace(options, memory_budget_bytes=need), 1 << 50)
    assert worker.layouts == driver.layouts


def test_evaluate_refuses_before_any_process_starts_and_leaves_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the session's folder lands here, alone
    monkeypatch.setattr(memory, "available_bytes", lambda: 4096)
    with pytest.raises(memory.DoesNotFit):
        evaluate(problem("vector_add"), solution("vector_add_torch"), quick(cases=[FIRST]))
    assert list(Path(tmp_path).glob("kernelindex-eval-*")) == []  # (a staging folder of the sandbox may stay)


WRONG_ON_CALL = """
calls = 0
def run(x, y, z):
    global calls
    calls += 1
    z.copy_(x + y + (1.0 if calls == {n} else 0.0))
"""


@pytest.mark.parametrize("wrong", [None, "late"], ids=["right", "wrong_in_a_later_chunk"])
def test_rounds_stream_through_the_slots_that_fit_and_every_round_is_checked(monkeypatch, tmp_path, wrong):
    """On a machine with room for 3 slots, 7 rounds run 3, 3 and 1 at a time; a solution wrong only on its
    6th call (a round of the second chunk) fails there, and a right one passes with every round checked."""
    vector_add = problem("vector_add")
    options = quick(rounds=7, iterations=6, pairs=3, cases=[FIRST])  # a timed batch takes 2 calls
    layout = case_layouts(vector_add, options, [vector_add.case(FIRST)])[FIRST]
    budget = _budget_for(layout, 3)
    monkeypatch.setattr(memory, "available_bytes", lambda: budget + 2 * memory.PROCESS_BYTES)
    assert memory_plan(vector_add, options, memory.available_bytes()).layouts[FIRST].slots == 3
    code = WRONG_ON_CALL.format(n=6) if wrong else WRONG_ON_CALL.format(n=-1)
    events = []
    suite = evaluate(vector_add, write_solution(tmp_path / "s", code), options, progress=events.append)
    result = suite.cases[0]
    rounds = [(e.done, e.total) for e in events if e.phase == "rounds"]
    if wrong:
        assert not result.passed and result.log.startswith("round-5:")
        assert rounds == [(0, 7), (3, 7)]  # it failed in the second chunk: no third
    else:
        assert result.passed, result.log
        assert rounds == [(0, 7), (3, 7), (6, 7)]
        assert [t for t in result.checked_calls if t.startswith("round-")] == [f"round-{r}" for r in range(7)]
        assert any(t.startswith("timed-") for t in result.checked_calls)


def test_several_solutions_on_streamed_rounds_are_each_checked_on_every_round(monkeypatch, tmp_path):
    """With 3 slots the rounds cannot keep slots of their own beside the timed batches, so a many-solution
    call has the reference make them again for each solution: a right one after a wrong one (and after
    the timed batches that reused the slots) still passes with every round checked against the reference."""
    vector_add = problem("vector_add")
    options = quick(rounds=7, iterations=6, pairs=3, cases=[FIRST])
    layout = case_layouts(vector_add, options, [vector_add.case(FIRST)])[FIRST]
    budget = _budget_for(layout, 3)
    monkeypatch.setattr(memory, "available_bytes", lambda: budget + 2 * memory.PROCESS_BYTES)
    right = write_solution(tmp_path / "right", WRONG_ON_CALL.format(n=-1))
    wrong = write_solution(tmp_path / "wrong", WRONG_ON_CALL.format(n=RNG.choice([4, 5, 6])))
    suites = evaluate_many(vector_add, [right, wrong, right], options)
    assert [s.cases[0].passed for s in suites] == [True, False, True], [s.cases[0].log for s in suites]
    for suite in (suites[0], suites[2]):
        checked = suite.cases[0].checked_calls
        assert [t for t in checked if t.startswith("round-")] == [f"round-{r}" for r in range(7)]


def test_a_case_with_room_for_fewer_calls_than_a_batch_takes_more_pairs_of_fewer(monkeypatch, tmp_path):
    """Room for one call's buffers where a timed batch wants three: the case is not refused (our 042 pack's
    largest case on a 23 GiB machine was) but timed in one-call pairs, as many timed calls a side in all,
    every one checked; a solution wrong on one timed call still fails."""
    vector_add = problem("vector_add")
    iterations, pairs = RNG.choice([(6, 2), (9, 3), (8, 2)])
    options = quick(rounds=3, iterations=iterations, pairs=pairs, cases=[FIRST])
    assert options.batch > 1
    layout = case_layouts(vector_add, options, [vector_add.case(FIRST)])[FIRST]
    budget = _budget_for(layout, 1)
    monkeypatch.setattr(memory, "available_bytes", lambda: budget + 2 * memory.PROCESS_BYTES)
    assert memory_plan(vector_add, options, memory.available_bytes()).layouts[FIRST].slots == 1
    events = []
    suite = evaluate(vector_add, write_solution(tmp_path / "s", WRONG_ON_CALL.format(n=-1)), options, events.append)
    result = suite.cases[0]
    assert result.passed, result.log
    assert [p.calls for p in result.pairs] == [1] * iterations
    assert {e.total for e in events if e.phase == "timing"} == {iterations}
    assert sum(t.startswith("timed-") for t in result.checked_calls) >= iterations  # noisy pairs rerun: more
    late = options.rounds + options.warmup + RNG.randint(1, iterations)  # one of the timed calls
    wrong = evaluate(vector_add, write_solution(tmp_path / "w", WRONG_ON_CALL.format(n=late)), options)
    assert not wrong.cases[0].passed and wrong.cases[0].log.startswith("timed-"), wrong.cases[0].log


def test_the_machines_available_memory_is_read():
    available = memory.available_bytes()
    assert available is None or available > 0


def test_streamed_rounds_give_each_case_timed_inputs_of_its_own(tmp_path):
    """Where the rounds stream through the timed slots (no room beside a batch of MAX_BATCH calls or more),
    the inputs the parent holds from one case's last timed attempt are never taken for the next case's
    first one: the two cases' inputs differ in shape, and each passes on inputs drawn for it."""
    vector_add = problem("vector_add")
    options = quick(rounds=3, iterations=RNG.randint(runner.MAX_BATCH, runner.MAX_BATCH + 40), pairs=1)
    layouts = case_layouts(vector_add, options, vector_add.cases)
    assert all(layout.slots < options.rounds + options.batch for layout in layouts.values())  # streamed
    suite = evaluate(vector_add, write_solution(tmp_path / "s", WRONG_ON_CALL.format(n=-1)), options)
    assert [c.passed for c in suite.cases] == [True, True], [c.log for c in suite.cases]
