"""Inputs a reference writes in place (issue 30: SOL-ExecBench's KV-cache problems update the cache they
are given and return it). Upstream checks no input, so its own reference passes there; here it was a
"hack". An input the reference writes is now part of the problem; a write into any other input is still
our own packs' hack, and on an upstream problem a disagreement shown on the run and kept out of rankings.
Every call gets a fresh copy of its inputs, so no write reaches a later call: the last test proves it."""

from __future__ import annotations

import random
import secrets

import pytest
from harness_testkit import problem, quick, write_solution

from kernelindex.harness.runner import STRICT_RULE_FLAG, evaluate

pytestmark = pytest.mark.xdist_group("in_place")

SEED = secrets.randbits(32)
RNG = random.Random(SEED)
CASE = RNG.choice(["5c0a7e11-0000-4000-8000-000000000001", "5c0a7e11-0000-4000-8000-000000000002"])


def _one(tmp_path, code: str, name: str = "cache_update_f32", fixture: str = "sol_cache_update"):
    solution = write_solution(tmp_path / "solution", code, definition=name, dps=False)
    suite = evaluate(problem(fixture), solution, quick(cases=[CASE], timeout_s=120))
    (result,) = suite.cases
    return result


def test_the_reference_that_updates_its_cache_passes_as_a_solution(tmp_path):
    code = problem("sol_cache_update").definition.reference
    result = _one(tmp_path, code)
    assert result.passed, (SEED, result.status, result.log)
    assert STRICT_RULE_FLAG not in result.flags and not result.disagreements, (SEED, result.disagreements)


def test_a_solution_that_leaves_the_cache_alone_passes_as_upstream_passes_it(tmp_path):
    code = """
import torch

def run(x, cache, pos):
    out = cache.clone()
    out[pos] = x * 2.0
    return x.sum(dim=1), out
"""
    assert _one(tmp_path, code).passed


def test_a_wrong_update_still_fails(tmp_path):
    factor = RNG.choice([2.5, 3.0, -2.0])
    code = f"""
import torch

def run(x, cache, pos):
    cache[pos] = x * {factor}
    return x.sum(dim=1), cache
"""
    result = _one(tmp_path, code)
    assert result.status == "INCORRECT_NUMERICAL", (SEED, factor, result.status, result.log)


def test_a_write_into_an_input_the_reference_leaves_alone_is_shown_and_not_ranked(tmp_path):
    code = """
import torch

def run(x, cache, pos):
    cache[pos] = x * 2.0
    sums = x.sum(dim=1)
    x.zero_()
    return sums, cache
"""
    result = _one(tmp_path, code)
    assert result.passed, (SEED, result.status, result.log)  # upstream's verdict: it checks no input
    assert STRICT_RULE_FLAG in result.flags and not result.ranked
    assert any("wrote into input 'x'" in line for line in result.disagreements), result.disagreements


def test_our_own_packs_still_call_a_write_into_an_input_a_hack(tmp_path):
    code = """
def run(x, y):
    x.add_(y)
    return x.clone()
"""
    solution = write_solution(tmp_path / "solution", code, dps=False)
    suite = evaluate(problem("vector_add"), solution, quick(cases=[problem("vector_add").cases[0].uuid]))
    (result,) = suite.cases
    assert result.status == "REWARD_HACK" and "wrote into input 'x'" in result.log, (result.status, result.log)


def test_no_write_into_an_in_place_input_reaches_a_later_call(tmp_path):
    """A solution marks the cache's spare rows and, once it sees a mark, answers from it; with a fresh
    copy of the inputs for every call it never sees one and must compute each time."""
    mark = RNG.uniform(1e6, 1e7)
    code = f"""
import torch

MARK = {mark!r}

def run(x, cache, pos):
    if bool((cache == MARK).any()):
        return torch.zeros(x.shape[0]), cache
    cache[pos] = x * 2.0
    spare = torch.ones(cache.shape[0], dtype=torch.bool)
    spare[pos] = False
    sums = x.sum(dim=1)
    out = cache.clone()
    cache[spare] = MARK
    return sums, out
"""
    result = _one(tmp_path, code)
    assert result.passed, (SEED, result.status, result.log)
    assert result.status == "PASSED"
