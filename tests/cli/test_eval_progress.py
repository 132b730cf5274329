"""`kernelindex eval --plan` shows how the cases fit this machine's memory and runs nothing; a run whose
console is no terminal (a log, a pipe) says each step inside a case as it happens, not only at the end.
The machine's available memory is made up here, so nothing depends on what is free."""

from __future__ import annotations

import random
import re
import secrets
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.formats.problem import load_problem
from kernelindex.harness import memory
from kernelindex.harness.runner import EvalOptions, case_layouts

FIXTURES = Path(__file__).resolve().parents[1] / "harness" / "fixtures"
VECTOR_ADD = FIXTURES / "problems" / "vector_add"
FIRST = "3a1f0e2c-0000-4000-8000-000000000001"
QUICK = ["--rounds", "5", "--warmup", "1", "--iterations", "4", "--pairs", "2"]  # a timed batch takes 2 calls


def _available_for(slots: int, rounds: int = 5) -> int:
    """MemAvailable at which the first case, alone, gets exactly ``slots`` slots."""
    problem = load_problem(VECTOR_ADD)
    layout = case_layouts(problem, EvalOptions(rounds=rounds), [problem.case(FIRST)])[FIRST]
    fitted = replace(layout, slots=slots)
    return memory.planned_bytes(fitted, fitted.total_bytes) + 2 * memory.PROCESS_BYTES


def _eval(*extra: str):
    args = ["eval", str(VECTOR_ADD), "--solution", str(FIXTURES / "solutions" / "vector_add_torch" / "solution.json")]
    return CliRunner().invoke(app, [*args, "--cases", FIRST, *QUICK, *extra])


def test_plan_prints_each_case_and_runs_nothing(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: _available_for(3))
    shown = _eval("--plan")
    assert shown.exit_code == 0, shown.output
    assert re.search(r"3a1f0e2c +3/ *\d+ slots of .* MiB, rounds 3 at a time", shown.output), shown.output
    assert "memory plan: peak" in shown.output and "1 of 1 case(s) on fewer slots" in shown.output
    assert "PASSED" not in shown.output and "rounds 0/5" not in shown.output  # nothing ran


def test_plan_of_cases_that_cannot_fit_says_what_they_need_and_what_there_is(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: _available_for(1) - 1)  # not even one call fits
    shown = _eval("--plan")
    assert shown.exit_code == 1
    assert re.search(r"does not fit: 1 case\(s\) \(3a1f0e2c\) need [\d.]+ GiB .* this machine has", shown.output)
    refused = _eval()  # a run is refused the same way, before anything starts
    assert refused.exit_code == 1 and "this machine has" in refused.output and "rounds 0/5" not in refused.output


@pytest.mark.parametrize("slots", [2, None], ids=["streamed", "memory_to_spare"])
def test_a_run_off_a_terminal_says_each_step_inside_a_case(monkeypatch, slots):
    monkeypatch.setattr(memory, "available_bytes", lambda: _available_for(slots) if slots else 1 << 50)
    shown = _eval()
    assert shown.exit_code == 0, shown.output
    # a pair that other load disturbed is run again, with a line that says so (see the next test)
    steps = re.findall(r"\] case 1/1 3a1f0e2c (\S+(?: \d+/\d+)?)(?!.*, again \()", shown.output)
    rounds = ["rounds 0/5", "rounds 2/5", "rounds 4/5"] if slots else ["rounds 0/5"]
    assert steps == ["load", *rounds, "warmup", "timing 0/2", "timing 1/2", "PASSED"], shown.output
    assert ("memory plan:" in shown.output) == bool(slots)  # said only when a case gets fewer slots


def test_a_share_of_the_machine_bounds_the_plan_below_what_it_has(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 50)
    share = (_available_for(3) - 2 * memory.PROCESS_BYTES + 3 * memory.PROCESS_BYTES) / (1 << 30)
    shown = _eval("--plan", "--host-memory-gib", f"{share + 1e-7:.12f}")
    assert shown.exit_code == 0 and re.search(r"3a1f0e2c +3/ *\d+ slots", shown.output), shown.output


def test_on_a_terminal_finished_case_bars_go_and_the_overall_bar_counts_verdicts():
    """Fifty candidates make no hundred bars: each case's bar is removed when it ends, and the one bar over
    candidates x cases carries the verdict counts (events made up here; the harness makes the real ones)."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from kernelindex.cli.evaluate import EvalProgress

    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    verdicts = [random.Random(secrets.randbits(32)).choice(["PASSED", "INCORRECT_NUMERICAL"]) for _ in range(6)]
    with EvalProgress(console, candidates=3, cases=2) as shown:
        for n, verdict in enumerate(verdicts):
            solution, case = n % 3, n // 3
            base = {"case_number": case, "cases": 2, "uuid": f"case{case}-uuid", "solution": solution}
            shown.update(SimpleNamespace(**base, phase="rounds", done=0, total=2, eta_s=None, result=None))
            assert len(shown.bar.tasks) == 2  # the overall bar and this case's
            shown.update(
                SimpleNamespace(
                    **base, phase="done", done=1, total=1, eta_s=None, result=SimpleNamespace(status=verdict)
                )
            )
            assert len(shown.bar.tasks) == 1
    counts = {v: verdicts.count(v) for v in set(verdicts)}
    assert shown.verdicts == counts
    assert shown.bar.tasks[0].completed == 6


def test_a_timed_pair_run_again_says_why(monkeypatch):
    """A pair that other load disturbed is run again, at most NOISY_RETRIES times, and each time the line
    says so and how its empty batches disagreed (every pair made to read as disturbed here)."""
    from kernelindex.harness import crosscheck
    from kernelindex.harness.runner import NOISY_RETRIES

    monkeypatch.setattr(crosscheck, "NOISE_RATIO", 0.5)  # any two empty batches now "disagree"
    shown = _eval()
    assert shown.exit_code == 0, shown.output
    again = re.findall(
        r"timing (\d)/2(?:, ~\d+s left)?, again \(its empty batches before and after took ([\d.]+) and ([\d.]+) ms\)",
        shown.output,
    )
    assert [pair for pair, _, _ in again] == ["0"] * NOISY_RETRIES + ["1"] * NOISY_RETRIES, shown.output
    assert all(float(before) > 0 and float(after) > 0 for _, before, after in again)
    assert shown.output.rstrip().count("PASSED") >= 1
