"""Torch dtypes of the upstream dtype names (`formats.dtypes` holds the names themselves).

torch is imported only inside functions: a process that never touches a tensor never loads it.
"""

from __future__ import annotations

from kernelindex.formats.dtypes import DTYPES


def torch_dtype(name: str):
    import torch

    return getattr(torch, DTYPES[name].torch_name)


def name_of(torch_dtype_value) -> str:
    """Upstream name of a torch dtype (for messages and checks)."""
    text = str(torch_dtype_value).removeprefix("torch.")
    for d in DTYPES.values():
        if d.torch_name == text:
            return d.name
    return text
