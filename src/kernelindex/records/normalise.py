"""Normalisers every importer and the harness share: slugs, tokens, upstream statuses, GPU architectures.

One table, so a product a trace names (``NVIDIA H20``, ``L4``, ``RTX 4090``) gets the architecture
the catalog gives it, whichever path brought it in. Pure functions; no I/O.
"""

from __future__ import annotations

import re
from typing import Any

UNKNOWN = "unknown"


def slug(text: str, limit: int = 120) -> str:
    """A record name: lower case, ``[a-z0-9._-]``, never empty."""
    value = re.sub(r"[^a-z0-9._-]+", "-", str(text).lower()).strip("-._")
    return (value or "unnamed")[:limit]


def token(text: str) -> str:
    """A value for the ``^[a-z][a-z0-9_]*$`` fields (library names, languages)."""
    value = re.sub(r"[^a-z0-9_]+", "_", str(text).lower()).strip("_")
    return value if value[:1].isalpha() else f"x_{value}"


# The status words of the upstream harnesses (FlashInfer-Bench / SOL-ExecBench traces, our own
# harness's results) -> the records' RunStatus.
RUN_STATUSES = {
    "PASSED": "passed",
    "INCORRECT_SHAPE": "incorrect_shape",
    "INCORRECT_DTYPE": "incorrect_dtype",
    "INCORRECT_NUMERICAL": "incorrect_numerical",
    "RUNTIME_ERROR": "runtime_error",
    "COMPILE_ERROR": "compile_error",
    "TIMEOUT": "timeout",
    "REWARD_HACK": "suspected_reward_hack",
    "INVALID_REFERENCE": "invalid_reference",
    "RESOURCE_EXCEEDED": "resource_exceeded",
}


def run_status(upstream: Any) -> str | None:
    """The RunStatus of an upstream status word (None: a word no harness writes, or no word)."""
    return RUN_STATUSES.get(upstream) if isinstance(upstream, str) else None


# (vendor, architecture) of every GPU product the public catalog names, and of the ones traces and
# solutions name. Keys are product names with everything but letters and digits removed; a product
# matches its longest key found in it ("h200" before "h20", "l40s" before "l4").
GPU_PRODUCTS: dict[str, tuple[str, str]] = {
    # NVIDIA Blackwell
    "gb300": ("nvidia", "sm_103"),
    "b300": ("nvidia", "sm_103"),
    "gb200": ("nvidia", "sm_100"),
    "b200": ("nvidia", "sm_100"),
    "b100": ("nvidia", "sm_100"),
    "rtx5090": ("nvidia", "sm_120"),
    "rtx5080": ("nvidia", "sm_120"),
    "rtxpro6000": ("nvidia", "sm_120"),
    # NVIDIA Hopper
    "gh200": ("nvidia", "sm_90"),
    "h200": ("nvidia", "sm_90"),
    "h100": ("nvidia", "sm_90"),
    "h800": ("nvidia", "sm_90"),
    "h20": ("nvidia", "sm_90"),
    # NVIDIA Ada
    "l40s": ("nvidia", "sm_89"),
    "l40": ("nvidia", "sm_89"),
    "l4": ("nvidia", "sm_89"),
    "rtx4090": ("nvidia", "sm_89"),
    "rtx4080": ("nvidia", "sm_89"),
    "rtx6000ada": ("nvidia", "sm_89"),
    # NVIDIA Ampere, Turing, Volta
    "a100": ("nvidia", "sm_80"),
    "a800": ("nvidia", "sm_80"),
    "a30": ("nvidia", "sm_80"),
    "a10g": ("nvidia", "sm_86"),
    "a10": ("nvidia", "sm_86"),
    "a40": ("nvidia", "sm_86"),
    "rtx3090": ("nvidia", "sm_86"),
    "rtxa6000": ("nvidia", "sm_86"),
    "t4": ("nvidia", "sm_75"),
    "v100": ("nvidia", "sm_70"),
    # AMD Instinct
    "mi355x": ("amd", "gfx950"),
    "mi350x": ("amd", "gfx950"),
    "mi325x": ("amd", "gfx942"),
    "mi300x": ("amd", "gfx942"),
    "mi300a": ("amd", "gfx942"),
    "mi250x": ("amd", "gfx90a"),
    "mi250": ("amd", "gfx90a"),
    "mi210": ("amd", "gfx90a"),
}
_BY_LENGTH = sorted(GPU_PRODUCTS, key=len, reverse=True)
_VENDOR_WORDS = {
    "nvidia": "nvidia",
    "geforce": "nvidia",
    "rtx": "nvidia",
    "tesla": "nvidia",
    "amd": "amd",
    "instinct": "amd",
    "radeon": "amd",
}


def product_key(product: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(product).lower())


def gpu_architecture(product: str) -> tuple[str, str] | None:
    """``(vendor, architecture)`` of a GPU product name, or None when the table has no such product."""
    key = product_key(product)
    found = next((name for name in _BY_LENGTH if name in key), None)
    return GPU_PRODUCTS[found] if found else None


def hardware_of(product: str) -> dict[str, str]:
    """The ``hardware`` block of an ExecutionEnvironment for a product name: vendor, product, architecture
    (``unknown`` where neither the table nor a vendor word in the name says)."""
    known = gpu_architecture(product)
    if known is not None:
        vendor, architecture = known
    else:
        lowered = str(product).lower()
        vendor = next((v for word, v in _VENDOR_WORDS.items() if word in lowered), UNKNOWN)
        architecture = UNKNOWN
    return {"vendor": vendor, "product": product, "architecture": architecture}
