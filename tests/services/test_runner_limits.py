"""A runner's own word on every job it takes: its sandbox mode, each worker's memory cap, its blob root and
the cases it keeps to, whatever the job's protocol (from the server) says."""

from __future__ import annotations

import pytest

from kernelindex.services import harness_adapter as harness
from kernelindex.services.remote_runner import RunnerLimits

JOB = {"protocol": {"rounds": 2, "warmup": 1, "iterations": 3, "timeout_s": 60.0}}
CASES = ["3a1f0e2c-0000-4000-8000-000000000001", "3a1f0e2c-0000-4000-8000-000000000002"]


def test_the_memory_cap_and_sandbox_are_the_runners_not_the_servers():
    hostile = {"protocol": {**JOB["protocol"], "memory_mb": 10**9, "sandbox": "off"}}
    limits = RunnerLimits("required", 2048)
    options = harness.evaluation_options(limits.protocol(hostile), "cpu", limits.cases_of(hostile))
    assert options.memory_limit_mb == 2048 and options.sandbox == "required"
    default = harness.evaluation_options(RunnerLimits().protocol(JOB), "cpu")
    assert default.memory_limit_mb == 16384  # the harness's own default when the runner names none


def test_the_blob_root_is_the_runners_not_the_servers():
    hostile = {"protocol": {**JOB["protocol"], "blob_root": "/home"}}
    assert harness.evaluation_options(RunnerLimits(blob_root="/data/traces").protocol(hostile), "cpu").blob_root == (
        "/data/traces"
    )
    assert harness.evaluation_options(RunnerLimits().protocol(hostile), "cpu").blob_root is None  # the worker's env


@pytest.mark.parametrize(
    "job_cases, mine, expected",
    [
        (None, None, None),  # every case of the problem
        (CASES, None, CASES),  # the request's own choice
        (None, ["3a1f0e2c-0000-4000-8000-000000000002"], ["3a1f0e2c-0000-4000-8000-000000000002"]),
        (CASES, ["3a1f0e2c-0000-4000-8000-0000000000"], CASES),  # a prefix keeps both
        (CASES[:1], [CASES[1][:36]], ValueError),  # the two leave nothing
    ],
)
def test_a_runners_cases_narrow_the_jobs(job_cases, mine, expected):
    job = {"protocol": {**JOB["protocol"], **({"cases": job_cases} if job_cases else {})}}
    limits = RunnerLimits(cases=mine)
    if expected is ValueError:
        with pytest.raises(ValueError, match="none of this runner's --cases"):
            limits.cases_of(job)
    else:
        assert limits.cases_of(job) == expected


def test_cases_are_picked_by_uuid_or_unique_prefix():
    assert harness.pick_cases(CASES, [CASES[1], CASES[1][:36], CASES[0]]) == [CASES[1], CASES[0]]
    with pytest.raises(ValueError, match="2 cases"):
        harness.pick_cases(CASES, ["3a1f0e2c"])
    with pytest.raises(ValueError, match="no case"):
        harness.pick_cases(CASES, ["ffff"])
