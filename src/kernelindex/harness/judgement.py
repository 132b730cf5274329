"""The one place a case's verdict is decided, in the parent, from facts the parent holds.

`Observations` collects what the parent saw: how its child processes ended (by its own clock
and process table), what it found in the buffers it owns, whether the problem and the harness
files still have the digests taken before the first case, and whether per-call figures fit its
own batch clock. The child's words enter only as a failure kind: once the parent knows a call
failed (the batch did not complete), the child may say whether the failure was a compile error,
a wrong shape or a wrong dtype. Nothing the child says can make a case pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelindex.harness.compare import OutputCheck
from kernelindex.harness.verdict import Verdict

_CALL_FAILURE = {"compile": Verdict.COMPILE_ERROR, "shape": Verdict.INCORRECT_SHAPE, "dtype": Verdict.INCORRECT_DTYPE}
_ENDED = {
    "timeout": Verdict.TIMEOUT,
    "memory": Verdict.RESOURCE_EXCEEDED,
    "died": Verdict.RUNTIME_ERROR,
    "desync": Verdict.SUSPECTED_REWARD_HACK,
}
_COMPARE = {
    "INCORRECT_SHAPE": Verdict.INCORRECT_SHAPE,
    "INCORRECT_DTYPE": Verdict.INCORRECT_DTYPE,
    "INCORRECT_NUMERICAL": Verdict.INCORRECT_NUMERICAL,
}


@dataclass
class Observations:
    tampering: list[str] = field(default_factory=list)
    solution_ended: tuple[str, str] | None = None  # (ChildEnded kind, detail)
    reference_ended: tuple[str, str] | None = None
    load_failed: str | None = None  # log of a solution that did not load
    reference_failed: str | None = None  # log of a reference call or input generation that failed
    call_failed: tuple[str, str] | None = None  # (kind the child gave, log)
    unasked_replies: bool = False
    malformed_reply: str | None = None  # a reply that fits no schema (where, and what was wrong)
    not_frozen: bool = False
    inputs_written: list[str] = field(default_factory=list)
    failed_output: tuple[str, OutputCheck] | None = None  # (call tag, check)
    timing_problem: str | None = None


def decide(seen: Observations) -> tuple[Verdict, str]:
    """(verdict, reason). Evidence of cheating first, then the reference, then the solution's own failures."""
    if seen.tampering:
        return Verdict.SUSPECTED_REWARD_HACK, "; ".join(seen.tampering)
    if seen.solution_ended and seen.solution_ended[0] == "desync":
        return Verdict.SUSPECTED_REWARD_HACK, seen.solution_ended[1]
    if seen.unasked_replies:
        return Verdict.SUSPECTED_REWARD_HACK, "replies nobody asked for on the solution process's control pipe"
    if seen.malformed_reply:
        return (
            Verdict.SUSPECTED_REWARD_HACK,
            f"a malformed reply on the solution process's control pipe {seen.malformed_reply}",
        )
    if seen.not_frozen:
        return Verdict.SUSPECTED_REWARD_HACK, "the solution's processes could not be held still while the reference ran"
    if seen.inputs_written:
        return Verdict.SUSPECTED_REWARD_HACK, "; ".join(f"wrote into input {n!r}" for n in seen.inputs_written)
    if seen.reference_ended:
        kind, detail = seen.reference_ended
        return (Verdict.TIMEOUT if kind == "timeout" else Verdict.INVALID_REFERENCE), f"reference process: {detail}"
    if seen.reference_failed:
        return Verdict.INVALID_REFERENCE, seen.reference_failed
    if seen.solution_ended:
        kind, detail = seen.solution_ended
        return _ENDED[kind], detail
    if seen.load_failed is not None:
        return Verdict.COMPILE_ERROR, seen.load_failed
    if seen.call_failed:
        kind, log = seen.call_failed
        return _CALL_FAILURE.get(kind, Verdict.RUNTIME_ERROR), log
    if seen.failed_output:
        tag, check = seen.failed_output
        return _COMPARE.get(check.status, Verdict.INCORRECT_NUMERICAL), f"{tag}: output {check.name!r}: {check.reason}"
    if seen.timing_problem:
        return Verdict.SUSPECTED_REWARD_HACK, seen.timing_problem
    return Verdict.PASSED, ""
