"""The words every layer shares: run statuses, evidence levels, metric directions, the harness source.

Each word is spelled once here, so a module compares against a member rather than a literal it
typed itself. The members are ``str`` values: they compare equal to the words stored in the
database and written in records, so stored data and emitted documents are unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """A run's status, as the records spell it (``RunStatus.PASSED == "passed"``).

    The harness's ``Verdict`` is this enum; ``records.kernel_kinds.RunStatusWord`` is the same
    words as the Literal the record schema publishes (a test checks they agree).
    """

    PASSED = "passed"
    INCORRECT_SHAPE = "incorrect_shape"
    INCORRECT_DTYPE = "incorrect_dtype"
    INCORRECT_NUMERICAL = "incorrect_numerical"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    RESOURCE_EXCEEDED = "resource_exceeded"
    INVALID_REFERENCE = "invalid_reference"
    POLICY_VIOLATION = "policy_violation"
    SUSPECTED_REWARD_HACK = "suspected_reward_hack"
    INCOMPLETE_EVIDENCE = "incomplete_evidence"
    REVOKED = "revoked"


class RequestState(StrEnum):
    """Where a rerun request stands in the queue: the API's and the CLI's ``state`` filter take these."""

    QUEUED = "queued"
    LEASED = "leased"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ServingStatus(StrEnum):
    """A serving run's status: the serving records say ``valid`` where kernel runs say ``passed``."""

    VALID = "valid"
    INVALID = "invalid"
    INCOMPLETE_EVIDENCE = "incomplete_evidence"


class EvidenceLevel(StrEnum):
    """How much a run's number has been checked, weakest first; members compare by that order.

    ``EvidenceLevel.VERIFIED > "reproducible"`` holds: a plain level word on the other side is read
    as its level, so stored words compare without being converted first.
    """

    REPORTED = "reported"
    REPRODUCIBLE = "reproducible"
    VERIFIED = "verified"
    REPLICATED = "replicated"

    @property
    def rank(self) -> int:
        """0 for ``reported`` up to 3 for ``replicated``."""
        return _LEVEL_RANK[self]

    @classmethod
    def named(cls, word: str) -> EvidenceLevel | None:
        """The level a word names, or None (``in EvidenceLevel`` raises for words on Python 3.11)."""
        return cls._value2member_map_.get(word)  # type: ignore[return-value]

    def __lt__(self, other: object) -> bool:
        return self.rank < _rank_of(other)

    def __le__(self, other: object) -> bool:
        return self.rank <= _rank_of(other)

    def __gt__(self, other: object) -> bool:
        return self.rank > _rank_of(other)

    def __ge__(self, other: object) -> bool:
        return self.rank >= _rank_of(other)


_LEVEL_RANK = {level: index for index, level in enumerate(EvidenceLevel)}


def _rank_of(other: object) -> int:
    if not isinstance(other, str):
        raise TypeError(f"an evidence level compares with a level word, not {type(other).__name__}")
    return _LEVEL_RANK[EvidenceLevel(other)]


class Direction(StrEnum):
    """Which way a metric improves. Kernel rankings say ``lower`` / ``higher``; the serving
    vocabulary (``records.serving_keys``) says ``min`` / ``max``, which is :attr:`extremum`."""

    LOWER = "lower"
    HIGHER = "higher"

    @property
    def extremum(self) -> str:
        """``min`` or ``max``: the serving vocabulary's word for this direction."""
        return "min" if self is Direction.LOWER else "max"


# The source this index's own harness stores its runs under, and the kind of source it is.
HARNESS_SOURCE = "kernelindex-harness"
CONTROLLED = "controlled"
STRICT_RULE_FLAG = "fails_kernelindex_strict"  # a run the benchmark's own judge passed and our stricter rule refused
UNSANDBOXED_RERUN = "unsandboxed_rerun"  # the harness ran it, without a sandbox: never verified


def is_harness_source(slug: str | None, kind: str | None) -> bool:
    """Was a run made by this index's harness? Its source is the harness's slug or a controlled
    source (the harness writes both; a bundle copied from another index may carry either)."""
    return slug == HARNESS_SOURCE or kind == CONTROLLED
