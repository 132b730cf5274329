"""The one table from a GPU product name to its vendor and architecture, for every importer.

A product a trace or leaderboard names (``NVIDIA H20``, ``L4``, ``RTX 5090``) gets the architecture
the catalog gives it, whichever path brought it in. Pure; no I/O.
"""

from __future__ import annotations

import re

UNKNOWN = "unknown"

# (vendor, architecture) of every GPU product the public catalog names, and of the ones traces,
# leaderboards and solutions name (the union of what the importers and the harness each knew). Keys are product names with everything but letters and digits removed; a product
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
    "4090": ("nvidia", "sm_89"),
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
    "mi355": ("amd", "gfx950"),
    "mi350x": ("amd", "gfx950"),
    "mi325x": ("amd", "gfx942"),
    "mi325": ("amd", "gfx942"),
    "mi300x": ("amd", "gfx942"),
    "mi300": ("amd", "gfx942"),
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
    "mi3": "amd",  # an Instinct the table does not list yet (MI308X, ...)
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
        vendor, arch = known
    else:
        lowered = str(product).lower()
        vendor = next((v for word, v in _VENDOR_WORDS.items() if word in lowered), UNKNOWN)
        arch = UNKNOWN
    return {"vendor": vendor, "product": product, "architecture": arch}


def architecture(product: str) -> str:
    """The architecture of a product name, ``unknown`` when the table has no such product."""
    known = gpu_architecture(product)
    return known[1] if known else UNKNOWN


def vendor(product: str) -> str:
    """The vendor of a product name: the table's, else a vendor word in the name, else ``unknown``."""
    return hardware_of(product)["vendor"]
