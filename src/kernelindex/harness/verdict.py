"""The one verdict type of the harness: the records' run statuses, as an enum.

`Verdict` is built from `records.kernel_kinds.RunStatus`, so the harness cannot grow a status the
records do not know. Only the parent process (`runner.decide`) turns what it observed into a
verdict; the upstream trace format's upper-case names are a mapping from it, nothing more.
"""

from __future__ import annotations

from enum import StrEnum
from typing import get_args

from kernelindex.records.kernel_kinds import RunStatus

Verdict = StrEnum("Verdict", {value.upper(): value for value in get_args(RunStatus)})
Verdict.__doc__ = "A run's status, as the records spell it (`Verdict.PASSED == 'passed'`)."

# Upstream trace lines (FlashInfer-Bench / SOL-ExecBench) name statuses in upper case and have
# no resource_exceeded: a run over its memory limit is a runtime error there.
_UPSTREAM = {
    Verdict.PASSED: "PASSED",
    Verdict.INCORRECT_SHAPE: "INCORRECT_SHAPE",
    Verdict.INCORRECT_DTYPE: "INCORRECT_DTYPE",
    Verdict.INCORRECT_NUMERICAL: "INCORRECT_NUMERICAL",
    Verdict.RUNTIME_ERROR: "RUNTIME_ERROR",
    Verdict.RESOURCE_EXCEEDED: "RUNTIME_ERROR",
    Verdict.COMPILE_ERROR: "COMPILE_ERROR",
    Verdict.TIMEOUT: "TIMEOUT",
    Verdict.SUSPECTED_REWARD_HACK: "REWARD_HACK",
    Verdict.INVALID_REFERENCE: "INVALID_REFERENCE",
}


def upstream_name(verdict: Verdict) -> str:
    """The trace-line status of a verdict (statuses the upstream format lacks become RUNTIME_ERROR)."""
    return _UPSTREAM.get(verdict, "RUNTIME_ERROR")
