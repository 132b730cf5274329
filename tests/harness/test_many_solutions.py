"""Several solutions in one call (`runner.evaluate_many`): the reference makes each case's checked
rounds once for all of them, yet each solution runs in sandboxes of its own on its own copy of the
inputs, gets its own verdicts and its own records, and nothing a hostile one does reaches the next."""

from __future__ import annotations

import mmap
import os
import secrets

import pytest
from harness_testkit import problem, quick, write_solution
from sandbox_testkit import need_sandbox

from kernelindex.harness import runner
from kernelindex.harness.records import evaluation_records
from kernelindex.harness.runner import evaluate_many
from kernelindex.records.canonical import digest

pytestmark = [pytest.mark.xdist_group("sandbox")]

# Adds correctly, then tries to poison what a later solution could see: its inputs (the next one's are
# the same values), files in every writable place and in the problem and harness folders, shared
# memory, its environment and the modules a later process imports.
POISON = """
import os, sys
import torch
import kernelindex.harness.child as harness_child

MARK = {mark!r}
PLACES = ["/tmp", "/tmp/.triton", "/tmp/.inductor", "/dev/shm", os.getcwd(), os.path.expanduser("~/.cache"),
          {problem!r}, os.path.dirname(harness_child.__file__)]

def run(x, y, z):
    torch.add(x, y, out=z)
    for place in PLACES:
        try:
            os.makedirs(place, exist_ok=True)
            open(os.path.join(place, MARK), "w").write("poison")
        except OSError:
            pass
    os.environ["KI_" + MARK] = "1"
    setattr(torch, "ki_" + MARK, 1)
    setattr(harness_child, "ki_" + MARK, 1)
    torch.add = lambda a, b, out=None: out.fill_(7.0) if out is not None else a  # for whoever imports it next
    x.fill_(1e6)  # its own copy of the inputs: the next solution's copy, and the reference's, stay as made
    y.zero_()
"""

# Adds correctly when nothing a poisoner left is there; otherwise writes zeros and says what it found.
CHECK = """
import os
import torch
import kernelindex.harness.child as harness_child

MARK = {mark!r}
PLACES = ["/tmp", "/tmp/.triton", "/tmp/.inductor", "/dev/shm", os.getcwd(), os.path.expanduser("~/.cache"),
          {problem!r}, os.path.dirname(harness_child.__file__)]
FOUND = [p for p in PLACES if os.path.exists(os.path.join(p, MARK))]
if os.environ.get("KI_" + MARK) or hasattr(torch, "ki_" + MARK) or hasattr(harness_child, "ki_" + MARK):
    FOUND.append("environment or module state")
print("found:", FOUND, flush=True)

def run(x, y, z):
    if FOUND:
        z.zero_()
    else:
        torch.add(x, y, out=z)
"""


def test_a_hostile_solution_cannot_change_the_next_ones_verdict(tmp_path, problem_copy):
    need_sandbox()
    mark = "m" + secrets.token_hex(6)
    code = {"mark": mark, "problem": str(problem_copy)}
    poisoner = write_solution(tmp_path / "poisoner", POISON.format(**code), name="poisoner")
    honest = write_solution(tmp_path / "honest", CHECK.format(**code), name="honest")
    # case by case, each solution after the poisoner on the same case, the same nonce and the same inputs
    suites = evaluate_many(problem("vector_add"), [poisoner, honest, poisoner, honest], quick())
    assert all(s.sandboxed for s in suites), suites[0].sandbox_note
    for suite in suites[0::2]:
        assert [c.status for c in suite.cases] == ["REWARD_HACK"] * 2, [c.log for c in suite.cases]
        assert all("wrote into input 'x'" in c.log for c in suite.cases), [c.log for c in suite.cases]
    for suite in suites[1::2]:
        assert [c.status for c in suite.cases] == ["PASSED", "PASSED"], [c.log for c in suite.cases]
        assert all("found: []" in c.solution_output for c in suite.cases), [c.solution_output for c in suite.cases]
    assert not any((problem_copy / mark).exists() or os.path.exists(f"{p}/{mark}") for p in ("/tmp", "/dev/shm"))


def test_each_solution_gets_its_own_suite_and_records_and_the_reference_rounds_run_once(tmp_path, monkeypatch):
    need_sandbox()
    asked: list[tuple[str, object]] = []  # every request to the reference: (op, its first call's purpose or timed)
    ask = runner._Session._ask_reference

    made_timed = []  # the timed calls whose inputs the reference was asked to make

    def counting(session, budget, message):
        asked.append((message["op"], message["calls"][0][1] if message["op"] == "inputs" else message.get("timed")))
        made_timed.extend(c[2] for c in message.get("calls", []) if c[1] == "timed")
        return ask(session, budget, message)

    monkeypatch.setattr(runner._Session, "_ask_reference", counting)
    right = write_solution(tmp_path / "right", "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n")
    zeros = write_solution(tmp_path / "zeros", "def run(x, y, z):\n    z.zero_()\n")
    options = quick()
    suites = evaluate_many(problem("vector_add"), [right, zeros, right], options)
    assert [s.solution.name for s in suites] == ["right", "zeros", "right"]
    assert [[c.status for c in s.cases] for s in suites] == [
        ["PASSED"] * 2,
        ["INCORRECT_NUMERICAL"] * 2,
        ["PASSED"] * 2,
    ]
    assert len({s.nonce for s in suites}) == 1  # one nonce: the same inputs for each, so the rounds are shared
    # the rounds' inputs made once per case, the reference's rounds batch once per case too
    assert asked.count(("inputs", "round")) == 2, asked
    # untimed batches: the rounds once per case, then a warm-up per case for each solution that passed them
    assert asked.count(("batch", False)) == 2 + 2 * 2, asked
    # every solution's timed calls are fresh to it, but a later solution's first attempt takes the inputs
    # of the attempt before it (held by the parent): the reference made fewer than were run
    for suite in suites:
        for case in suite.cases:
            timed = [tag for tag in case.checked_calls if tag.startswith("timed-")]
            assert len(timed) == len(set(timed)), timed
    run = sum(tag.startswith("timed-") for s in suites for c in s.cases for tag in c.checked_calls)
    assert 0 < len(made_timed) < run, (len(made_timed), run)
    records = [evaluation_records(s) for s in suites]
    runs = [{r["spec"]["status"] for r in rec.case_runs} for rec in records]
    assert runs == [{"passed"}, {"incorrect_numerical"}, {"passed"}], runs
    digests = [{rec.suite_run["spec"]["implementationDigest"]} for rec in records]
    assert digests[0] == digests[2] != digests[1]
    run_digests = [digest(r) for rec in records for r in [*rec.case_runs, rec.suite_run]]
    assert len(set(run_digests)) == 9  # the same solution twice is still two suites of runs, measured apart


# Fills every byte of its arena (its inputs and outputs, the padding between them, every slot it was
# never handed) with MARK_BYTE, as a message for whoever maps the memory next.
SCRAWL = """
import torch

def run(x, y, z):
    whole = torch.empty(0, dtype=torch.uint8).set_(x.untyped_storage())
    whole.fill_({byte})
"""

# Adds correctly unless some whole page of its arena holds nothing but MARK_BYTE (random inputs never do).
LOOK = """
import torch

def run(x, y, z):
    whole = torch.empty(0, dtype=torch.uint8).set_(x.untyped_storage())
    pages = whole[: whole.numel() // 4096 * 4096].view(-1, 4096)
    if bool((pages == {byte}).all(dim=1).any()):
        z.zero_()
    else:
        torch.add(x, y, out=z)
"""


def test_a_case_s_solutions_share_one_arena_and_none_finds_what_the_last_one_left_in_it(tmp_path, monkeypatch):
    need_sandbox()
    byte = secrets.choice([b for b in range(1, 256) if b != 0x7F])
    made = []

    class Counted(runner.Arena):
        def __init__(self, nbytes, device):
            made.append(nbytes)
            super().__init__(nbytes, device)

    monkeypatch.setattr(runner, "Arena", Counted)
    scrawler = write_solution(tmp_path / "scrawler", SCRAWL.format(byte=byte), name="scrawler")
    looker = write_solution(tmp_path / "looker", LOOK.format(byte=byte), name="looker")
    suites = evaluate_many(problem("vector_add"), [scrawler, looker, scrawler, looker], quick())
    assert all(s.sandboxed for s in suites), suites[0].sandbox_note
    for suite in suites[0::2]:
        assert [c.status for c in suite.cases] == ["REWARD_HACK"] * 2, [c.log for c in suite.cases]
    for suite in suites[1::2]:
        assert [c.status for c in suite.cases] == ["PASSED", "PASSED"], [c.log for c in suite.cases]
    # the reference's arena, then one solution arena per case: each later solution took the one before it
    assert len(made) == 1 + len(suites[0].cases), made


def _data_end(arena: runner.Arena) -> int:
    """Where the arena's last written page ends (0: none written)."""
    end, offset = 0, 0
    while True:
        try:
            offset = os.lseek(arena.fd, offset, os.SEEK_DATA)
        except OSError:
            return end
        end = offset = os.lseek(arena.fd, offset, os.SEEK_HOLE)


def test_a_solution_s_batch_holds_no_more_than_its_own_and_sizes_from_the_case_s_quickest_empty_batches(
    tmp_path, monkeypatch
):
    need_sandbox()
    rng = secrets.SystemRandom()
    big = rng.randint(8, 48)
    sizes = [big, rng.randint(2, big - 1), big]  # a batch, a smaller one, the larger again
    own: list[list[tuple[int, int]]] = []  # per sizing (a solution and case): the empty batches it measured
    used: list[tuple[int, int]] = []  # per sizing: the figures it sized from (one call's, the warm-up's)
    seen: list[
        tuple[int, int, int, int]
    ] = []  # per timed attempt: its batch, copies held, what each arena holds past it
    size_batch, empty_batch, timed_pair = (
        runner._CaseRun._batch_size,
        runner._CaseRun._empty_batch,
        runner._CaseRun._timed_pair,
    )

    sizing = [False]

    def sized(run, warm, calls):
        own.append([])
        sizing[0] = True
        size_batch(run, warm, calls)
        sizing[0] = False
        used.append(run.s.timed.overheads[calls])
        return sizes[(len(used) - 1) % len(sizes)]

    def counted(run, size):
        took = empty_batch(run, size)
        if sizing[0]:
            own[-1].append((size, took))
        return took

    def looked(run, pair, timed, first, last_attempt):
        end = -(-(timed[-1] + 1) * run.layout.slot_bytes // mmap.PAGESIZE) * mmap.PAGESIZE  # the batch's last page
        past = [max(0, _data_end(arena) - end) for arena in (run.s.reference_arena, run.arena)]
        seen.append((len(timed), len(run.s.timed.copies), *past))
        return timed_pair(run, pair, timed, first, last_attempt)

    monkeypatch.setattr(runner._CaseRun, "_batch_size", sized)
    monkeypatch.setattr(runner._CaseRun, "_empty_batch", counted)
    monkeypatch.setattr(runner._CaseRun, "_timed_pair", looked)
    right = write_solution(tmp_path / "right", "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n")
    suites = evaluate_many(problem("vector_add"), [right] * len(sizes), quick())
    assert [[c.status for c in s.cases] for s in suites] == [["PASSED"] * 2] * len(sizes), suites
    # each sizing measures the reference's empty batches and sizes from the quickest the case has seen so far
    assert [len(mine) for mine in own] == [2 * runner.SIZING_EMPTIES] * 2 * len(sizes), own
    n = runner.SIZING_EMPTIES
    for case in range(2):
        mine = own[case * len(sizes) : (case + 1) * len(sizes)]
        for k, figures in enumerate(used[case * len(sizes) : (case + 1) * len(sizes)]):
            ones = [took for batches in mine[: k + 1] for _, took in batches[:n]]
            warm = [took for batches in mine[: k + 1] for _, took in batches[n:]]
            assert figures == (min(ones), min(warm)), (k, figures, mine)
    # at every timed attempt the parent holds the copies of this batch's slots at most, and neither arena
    # holds a page past them, whatever batch a solution before it drew
    assert {size for size, *_ in seen} == set(sizes), seen
    assert [s for s in seen if s[1] > s[0] or s[2:] != (0, 0)] == [], seen
