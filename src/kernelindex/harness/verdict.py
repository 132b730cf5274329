"""The one verdict type of the harness: the records' run statuses, as an enum.

`Verdict` is the records' `RunStatus` (records/vocabulary.py), so the harness cannot grow a status
the records do not know. Only the parent process (`runner.decide`) turns what it observed into a
verdict; the upstream trace format's upper-case names are a mapping from it, nothing more.
"""

from __future__ import annotations

from kernelindex.records.vocabulary import RunStatus as Verdict

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
