"""Tokens and upstream status words are normalised the same everywhere."""

from __future__ import annotations

from kernelindex.records.normalise import RUN_STATUSES, run_status, token
from kernelindex.records.vocabulary import RunStatus


def test_statuses_are_run_statuses_and_tokens_are_clean():
    assert set(RUN_STATUSES.values()) <= set(RunStatus)
    assert all(type(word) is str for word in RUN_STATUSES.values())  # plain words go into records
    assert run_status("REWARD_HACK") == "suspected_reward_hack" and run_status("SOMETHING") is None
    assert token("CUDA-Toolkit 13") == "cuda_toolkit_13" and token("13cuda") == "x_13cuda"
