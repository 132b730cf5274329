"""Normalisers every importer and the harness share: tokens and upstream status words.

Slugs are in ``records.names``, GPU architectures in ``records.hardware``. Pure functions; no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from kernelindex.records.vocabulary import RunStatus


def token(text: str) -> str:
    """A value for the ``^[a-z][a-z0-9_]*$`` fields (library names, languages)."""
    value = re.sub(r"[^a-z0-9_]+", "_", str(text).lower()).strip("_")
    return value if value[:1].isalpha() else f"x_{value}"


# The status words of the upstream harnesses (FlashInfer-Bench / SOL-ExecBench traces, our own
# harness's results) -> the records' RunStatus (plain words: they go into records as they are).
RUN_STATUSES = {
    "PASSED": RunStatus.PASSED.value,
    "INCORRECT_SHAPE": RunStatus.INCORRECT_SHAPE.value,
    "INCORRECT_DTYPE": RunStatus.INCORRECT_DTYPE.value,
    "INCORRECT_NUMERICAL": RunStatus.INCORRECT_NUMERICAL.value,
    "RUNTIME_ERROR": RunStatus.RUNTIME_ERROR.value,
    "COMPILE_ERROR": RunStatus.COMPILE_ERROR.value,
    "TIMEOUT": RunStatus.TIMEOUT.value,
    "REWARD_HACK": RunStatus.SUSPECTED_REWARD_HACK.value,
    "INVALID_REFERENCE": RunStatus.INVALID_REFERENCE.value,
    "RESOURCE_EXCEEDED": RunStatus.RESOURCE_EXCEEDED.value,
}


def run_status(upstream: Any) -> str | None:
    """The RunStatus of an upstream status word (None: a word no harness writes, or no word)."""
    return RUN_STATUSES.get(upstream) if isinstance(upstream, str) else None
