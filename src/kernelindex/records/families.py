"""The family an operation is shown under, when the record's own family contradicts its name.

Upstream records are kept as received, and a few carry a family their name contradicts (the
SOL-ExecBench ``029-mamba-conv1d-with-gating`` says ``moe``). We never edit a record; pages and
search show the family the name and tags support, and keep the stated one beside it.
A correction needs three things: the stated family is one we have signals for, the name shows
none of them, and exactly one other family's signals are in the name (a tag breaks a tie).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SIGNALS = {
    "moe": ("moe", "expert", "experts", "routing", "router", "dispatch"),
    "ssm": ("mamba", "mamba2", "hyena", "ssm", "segsum", "selective"),
    "attention": ("attention", "attn", "sdpa", "flash", "kv", "gqa", "mla"),
    "rope": ("rope", "rotary"),
    "normalization": ("norm", "norms", "rmsnorm", "layernorm", "groupnorm", "normalization"),
    "gemm": ("gemm", "matmul", "mm", "gemv"),
}
_WORDS = re.compile(r"[a-z0-9]+")


def _signalled(words: set[str]) -> set[str]:
    return {family for family, signals in SIGNALS.items() if words & set(signals)}


def shown_family(stated: str | None, name: str | None, tags: Iterable[str] | None = ()) -> str | None:
    """The family to show: ``stated`` unless its name contradicts it (see the module docstring)."""
    if not stated or stated not in SIGNALS or not name:
        return stated
    words = set(_WORDS.findall(name.lower()))
    found = _signalled(words)
    if stated in found or not found:
        return stated
    if len(found) > 1:
        found &= set(tags or ())
    return found.pop() if len(found) == 1 else stated
