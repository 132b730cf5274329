"""Hostile solutions against the published figure and the parent's trust in what it reads.

Each class from the trust review: figures the solution's process makes, work moved where the
clock does not look, a discount it can inflate, text it writes into evidence, shared pages and
paths it can change under the parent, outliers a matched ratio lets through. Every one must earn
nothing: a failed case, or a figure that shows the work it really did.
"""

from __future__ import annotations

import os
import random
import secrets
import stat
import tempfile

import pytest
from harness_testkit import problem, quick, write_solution

from kernelindex.harness import sandbox
from kernelindex.harness.records import evaluation_records
from kernelindex.harness.replies import NOTES_PER_CASE, OUTPUT_CHARS
from kernelindex.harness.runner import evaluate

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"
RNG = random.Random(secrets.randbits(64))

pytestmark = [
    pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}"),
    pytest.mark.xdist_group("hostile"),
]


def _run(tmp_path, code: str, name: str | None = None, **options):
    solution = write_solution(tmp_path / "solution", code, name=name)
    suite = evaluate(problem("vector_add"), solution, quick(cases=[FIRST], timeout_s=90, **options))
    (result,) = suite.cases
    return suite, result


def _shows_the_work(result, per_call_ns: float) -> None:
    """Passed only with a published figure at least most of the work each call really costs."""
    if result.passed:
        assert result.latency.median >= 0.7 * per_call_ns, (result.latency.median, [p.to_dict() for p in result.pairs])
        assert all(p.solution_ns >= 0.7 * per_call_ns for p in result.pairs)


def test_a_rewritten_clock_and_faked_samples_change_no_published_figure(tmp_path):
    """The C function behind perf_counter_ns re-pointed (identity unchanged) and the harness's sample
    list rewritten: the published figure is the parent's, so the real cost shows."""
    cost_ms = RNG.uniform(1.5, 2.5)
    code = f"""
import ctypes, sys, time
import torch

COUNTER = [0]
PROTO = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p)
CALLBACK = PROTO(lambda module, unused: COUNTER.__setitem__(0, COUNTER[0] + 1) or COUNTER[0])

class MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]

REAL = time.monotonic
definition = ctypes.c_void_p.from_address(id(time.perf_counter_ns) + 2 * ctypes.sizeof(ctypes.c_void_p)).value
MethodDef.from_address(definition).meth = ctypes.cast(CALLBACK, ctypes.c_void_p).value

def run(x, y, z):
    end = REAL() + {cost_ms / 1000!r}
    while REAL() < end:
        pass
    torch.add(x, y, out=z)
    frame = sys._getframe(1)
    while frame is not None:
        samples = frame.f_locals.get("samples")
        if isinstance(samples, list):
            samples[:] = [1] * len(samples)
        frame = frame.f_back
"""
    _, result = _run(tmp_path, code)
    assert result.status in ("PASSED", "REWARD_HACK"), result.log
    _shows_the_work(result, cost_ms * 1e6)
    if result.passed:  # what the process said is kept beside, labelled, and is not the figure
        assert any(sum(p.solution_reported) < p.solution_batch_ns / 10 for p in result.pairs)


def test_doing_every_slot_in_the_first_call_is_inside_the_batch(tmp_path):
    """The first call of a batch finds every slot's views up the stack and does all the work; the
    other calls return at once. The parent's batch clock holds all of it."""
    cost_ms = RNG.uniform(1.0, 2.0)
    code = f"""
import sys, time
import torch

DONE = set()

def run(x, y, z):
    if z.data_ptr() in DONE:
        DONE.discard(z.data_ptr())
        return
    frame = sys._getframe(1)
    while frame is not None and "views" not in frame.f_locals:
        frame = frame.f_back
    for args, outs in frame.f_locals["views"]:
        end = time.monotonic() + {cost_ms / 1000!r}
        while time.monotonic() < end:
            pass
        torch.add(args[0], args[1], out=outs[0])
        DONE.add(outs[0].data_ptr())
    DONE.discard(z.data_ptr())
"""
    _, result = _run(tmp_path, code)
    assert result.status in ("PASSED", "REWARD_HACK"), result.log
    _shows_the_work(result, cost_ms * 1e6)


def test_busy_threads_buy_no_discount(tmp_path):
    """Twelve idle-priority busy loops beside 1 ms of hidden work a call: nothing is discounted for
    time its threads waited for a CPU, so the work shows."""
    cost_ms = RNG.uniform(1.0, 1.5)
    code = f"""
import os, threading, time
import torch

def burn():
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    while True:
        pass

for _ in range(12):
    threading.Thread(target=burn, daemon=True).start()

def run(x, y, z):
    end = time.monotonic() + {cost_ms / 1000!r}
    while time.monotonic() < end:
        pass
    torch.add(x, y, out=z)
"""
    _, result = _run(tmp_path, code)
    # its burners slow nobody but itself (its CPU is its own): honest figures, or out of time
    assert result.status in ("PASSED", "REWARD_HACK", "TIMEOUT"), result.log
    _shows_the_work(result, cost_ms * 1e6)


def test_outputs_finished_after_the_reply_do_not_pass(tmp_path):
    """Each call hands its work to a thread and returns at once: the processes are frozen when the
    batch's reply arrives and every timed call is checked, so the late outputs are never seen."""
    code = """
import threading, time
import torch

def late(x, y, z):
    time.sleep(0.002)
    torch.add(x, y, out=z)

def run(x, y, z):
    threading.Thread(target=late, args=(x, y, z), daemon=True).start()
"""
    _, result = _run(tmp_path, code)
    assert not result.passed and result.status in ("INCORRECT_NUMERICAL", "REWARD_HACK"), result.log


def test_forged_notes_stay_the_solutions_words(tmp_path):
    """Notes that forge harness lines, draw with ANSI escapes and run to a megabyte a batch: kept
    escaped, capped, labelled as the solution's output, and never in the harness's log."""
    code = """
import torch
import kernelindex.harness.child as child

FORGED = ["verdict: passed (PASSED) at 1000x", "\\x1b[2J\\x1b[Hchecked calls: every call", "sandbox: bubblewrap\\nflags: none"]
child.SolutionProcess.notes = lambda self: FORGED + ["x" * 4096 + str(i) for i in range(256)]

def run(x, y, z):
    torch.add(x, y, out=z)
"""
    suite, result = _run(tmp_path, code)
    assert result.passed, result.log
    said = result.solution_output
    assert "\x1b" not in said and "\\u001b[2J" in said and len(said) <= OUTPUT_CHARS + 16
    assert said.count("\n") <= NOTES_PER_CASE + 8  # a note is one line: its own newlines are escaped
    records = evaluation_records(suite)
    log = next(a for a in records.artifacts if a.role == "logs" and a.run_digest).content.decode()
    assert "1000x" not in log and "every call\n" not in log and "\x1b" not in log
    assert log.count("verdict:") == 1 and len(log) < 4096
    kept = [a for a in records.artifacts if a.role == "solutionOutput"]
    assert len(kept) == 1 and kept[0].content.decode() == said
    raw = next(a for a in records.artifacts if a.role == "rawSamples" and a.run_digest == kept[0].run_digest)
    assert kept[0].digest in raw.content.decode()  # cited by the signed evidence, not pasted into it


@pytest.mark.parametrize("notes", ["[123, {'a': 1}]", "'not a list'", "[None]"])
def test_notes_of_the_wrong_type_fail_the_case_not_the_parent(tmp_path, notes):
    code = f"""
import torch
import kernelindex.harness.child as child

child.SolutionProcess.notes = lambda self: {notes}

def run(x, y, z):
    torch.add(x, y, out=z)
"""
    _, result = _run(tmp_path, code)
    assert result.status == "REWARD_HACK" and "malformed reply" in result.log, result.log


def test_a_truncated_arena_does_not_kill_the_parent(tmp_path, monkeypatch):
    """ftruncate on every memfd the process holds (its arena among them): the seals refuse it, so the
    parent never takes SIGBUS reading the pages, and it cleans up after itself."""
    own = tmp_path / "tmp"
    own.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own))  # this evaluation's folders, and no one else's
    code = """
import errno, os
import torch

REFUSED = []
for name in os.listdir("/proc/self/fd"):
    try:
        memfd = "memfd" in os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        continue
    if memfd:
        for size in (0, 1 << 40):
            try:
                os.ftruncate(int(name), size)
            except OSError as exc:
                REFUSED.append(exc.errno)
assert REFUSED and set(REFUSED) == {errno.EPERM}, REFUSED

def run(x, y, z):
    torch.add(x, y, out=z)
"""
    _, result = _run(tmp_path, code)
    assert result.passed, (result.log, result.solution_output)
    assert not os.listdir(own)


def test_cleanup_never_follows_a_link_out_of_scratch(tmp_path):
    """Links in scratch to a host file and a host folder, both read-only: after the evaluation both
    keep their modes (the cleanup removes links, it never chmods what they point at)."""
    target = tmp_path / "host-secret"
    target.write_text("host file")
    target.chmod(0o400)
    folder = tmp_path / "host-folder"
    folder.mkdir()
    folder.chmod(0o500)
    code = f"""
import os
import torch

os.symlink({str(target)!r}, "file-link")
os.symlink({str(folder)!r}, "folder-link")

def run(x, y, z):
    torch.add(x, y, out=z)
"""
    try:
        _, result = _run(tmp_path, code)
        assert result.passed, result.log
        assert stat.S_IMODE(target.stat().st_mode) == 0o400
        assert stat.S_IMODE(folder.stat().st_mode) == 0o500
    finally:
        folder.chmod(0o700)


def test_huge_outliers_in_a_few_outputs_fail(tmp_path):
    """1e30 written into under 1% of the outputs, under the problem's 0.99 matched ratio when it has
    one: no ratio admits an element that far off, and the run records how far off it was."""
    code = """
import torch

def run(x, y, z):
    torch.add(x, y, out=z)
    flat = z.view(-1)
    flat[:: 128] = 1e30
"""
    _, result = _run(tmp_path, code)
    assert result.status == "INCORRECT_NUMERICAL", result.log
    assert max(o.max_absolute_error for o in result.outputs) >= 1e29


def test_outliers_the_benchmarks_rule_admits_are_never_ranked(tmp_path):
    """The same fixture read as an upstream (SOL-ExecBench) problem: its matched-ratio rule passes 1e30 in
    under 1% of the outputs, and that verdict is the benchmark's to give (issue 30), but our rule refuses
    it, so the case carries the flag that keeps it out of every ranking, and the run says why."""
    import json
    import shutil

    from harness_testkit import PROBLEMS

    from kernelindex.formats.problem import load_problem
    from kernelindex.harness.runner import STRICT_RULE_FLAG

    upstream = tmp_path / "vector_add_upstream"
    shutil.copytree(PROBLEMS / "vector_add", upstream)
    definition = json.loads((upstream / "definition.json").read_text())
    definition.pop("kernelindex_judge", None)
    (upstream / "definition.json").write_text(json.dumps(definition))
    stride = RNG.choice([128, 150, 200])  # under 1% of the elements, wherever they fall
    code = f"""
import torch

def run(x, y, z):
    torch.add(x, y, out=z)
    z.view(-1)[:: {stride}] = 1e30
"""
    solution = write_solution(tmp_path / "solution", code)
    suite = evaluate(load_problem(upstream), solution, quick(cases=[FIRST], timeout_s=90))
    (result,) = suite.cases
    assert load_problem(upstream).format != "kernelindex"
    assert result.passed, result.log  # the benchmark's own verdict: its matched ratio holds
    assert STRICT_RULE_FLAG in result.flags and not result.ranked
    assert any("the benchmark's rule passes it" in line for line in result.disagreements)
